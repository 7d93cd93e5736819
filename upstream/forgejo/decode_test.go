package forgejo

import (
	"encoding/json"
	"fmt"
	"reflect"
	"testing"

	"github.com/agent-gateway/agent-gateway/upstream"
)

// agreeDecodeNative fails t unless decodeNativeJSON does what the
// exchange's checkNativeJSON (whose verdict on body is checkErr) followed
// by json.Unmarshal did: the same refusal at the same stage, else the same
// value decoded.
func agreeDecodeNative(t *testing.T, body []byte, checkErr error) {
	t.Helper()
	var got, want nativeRepo
	stage, err := decodeNativeJSON(body, &got)
	var wantStage upstream.Stage
	wantErr := checkErr
	if checkErr != nil {
		wantStage = upstream.StageCheck
	} else if err := json.Unmarshal(body, &want); err != nil {
		wantStage, wantErr = upstream.StageDecode, err
	}
	if stage != wantStage || fmt.Sprint(err) != fmt.Sprint(wantErr) {
		t.Fatalf("%q: decodeNativeJSON = %v %v, check then decode = %v %v", body, stage, err, wantStage, wantErr)
	}
	if err == nil && !reflect.DeepEqual(got, want) {
		t.Fatalf("%q: decodeNativeJSON read %+v, json.Unmarshal %+v", body, got, want)
	}
}

// decodeNativeJSON skips json.Valid's pass but refuses what the checks
// refused, first refusal first, and decodes what they passed as before.
func TestDecodeNativeJSON(t *testing.T) {
	for _, body := range []string{
		`{"id":7,"name":"public","owner":{"login":"demo"}}`,
		"{\"name\":\"\xff\"}",            // not UTF-8
		`{"id":7,`,                       // not JSON
		`{"id":7} x`,                     // trailing text
		`{"name":"\ud800"}`,              // lone surrogate
		`{"id":7,"ID":8}`,                // folded repeat
		`{"id":"seven"}`,                 // strict, but not a repository
		`{"id":"seven","id":"eight"}`,    // a repeat outranks the wrong type
		`{"id":"seven","name":"\udc00"}`, // so does a lone surrogate
		`[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]`, // too deep
		`{"size":1e999}`, // beyond float64
		`[]`,             // not an object
	} {
		agreeDecodeNative(t, []byte(body), checkNativeJSON([]byte(body)))
	}
}
