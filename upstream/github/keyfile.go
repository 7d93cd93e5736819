package github

import (
	"errors"
	"fmt"
	"io"
	"os"
)

// maxKeyFile bounds the App's private key file: a PEM RSA key of 4096
// bits is about 3 KiB.
const maxKeyFile = 64 << 10

// readKeyFile reads the App's private key from the protected file
// github.private_key_file names
// (docs/architecture.md#github-app-and-installation-tokens). The file is
// opened once and checked on the open descriptor, so what is read is what
// was checked: a regular file (a symbolic link is followed to it), at most
// maxKeyFile bytes, and protected — see keyFileProtected. The errors
// name the file and what to change, never its content.
func readKeyFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file", path)
	}
	if err := keyFileProtected(path, fi); err != nil {
		return nil, err
	}
	b, err := io.ReadAll(io.LimitReader(f, maxKeyFile+1))
	if err != nil {
		return nil, err
	}
	if len(b) > maxKeyFile {
		return nil, errors.New(path + " is larger than a private key")
	}
	return b, nil
}
