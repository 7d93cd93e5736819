package server

import (
	"encoding/json"
	"net/http"
	"strconv"

	"github.com/agent-gateway/agent-gateway/upstream/toolerr"
)

// refusedAnswer is the whole HTTP answer to a refused connection, written
// before any HTTP server reads the request: overloaded, with the status and
// body middleware.Refuse would give it (toolerr's code table).
var refusedAnswer = func() string {
	e := toolerr.New(toolerr.Overloaded, "the gateway is at its bound of open connections; retry later")
	body, err := json.Marshal(e.Body())
	if err != nil {
		panic(err)
	}
	body = append(body, '\n')
	status := e.Code.HTTPStatus()
	return "HTTP/1.1 " + strconv.Itoa(status) + " " + http.StatusText(status) + "\r\nContent-Type: application/json\r\nCache-Control: no-store\r\n" +
		"Retry-After: 1\r\nConnection: close\r\nContent-Length: " + strconv.Itoa(len(body)) + "\r\n\r\n" + string(body)
}()
