package main

import (
	"bufio"
	"io"
	"log/slog"
	"net"
	"net/http"
	"testing"
	"time"

	"svcbridge/api"
)

// A request with both Transfer-Encoding and Content-Length is refused
// with 400 and its connection closed: what follows its chunked body (here
// a DELETE) never runs. A chunked request alone is served as before, and
// its connection kept.
func TestSmuggledRequestIsRefusedAndItsConnectionClosed(t *testing.T) {
	ln, _ := serveTestAPI(t, nil, api.Options{Logger: slog.New(slog.DiscardHandler), Reconciler: noReconciles{}})
	base := "http://" + ln.Addr().String()
	do := func(method, path string, body any) int {
		t.Helper()
		code, _ := callAPI(t, base, token, method, path, body)
		return code
	}
	if code := do("POST", "/api/v3/agents", map[string]string{"name": "victim"}); code != http.StatusCreated {
		t.Fatalf("create: %d", code)
	}

	// exchange sends raw on one connection and reads the answers in order
	// until the server closes it.
	exchange := func(raw string) (codes []int, closed bool) {
		t.Helper()
		conn, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		conn.SetDeadline(time.Now().Add(time.Minute)) // only so a broken server cannot hang the test
		if _, err := io.WriteString(conn, raw); err != nil {
			t.Fatal(err)
		}
		r := bufio.NewReader(conn)
		for {
			resp, err := http.ReadResponse(r, nil)
			if err != nil {
				return codes, err == io.EOF || err == io.ErrUnexpectedEOF
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			codes = append(codes, resp.StatusCode)
			if len(codes) == 2 {
				return codes, false // the connection serves on
			}
		}
	}
	auth := "Host: svcbridge\r\nAuthorization: Bearer " + token + "\r\n"
	smuggled := "DELETE /api/v3/agents/victim HTTP/1.1\r\n" + auth + "\r\n"
	body := `{"name":"x"}`
	chunked := "c\r\n" + body + "\r\n0\r\n\r\n"

	codes, closed := exchange("POST /api/v3/agents HTTP/1.1\r\n" + auth + "Content-Type: application/json\r\n" +
		"Content-Length: 4\r\ntransfer-encoding: chunked\r\n\r\n" + chunked + smuggled)
	if len(codes) != 1 || codes[0] != http.StatusBadRequest || !closed {
		t.Errorf("smuggling request: answers %v, closed %v; want one 400, then the connection closed", codes, closed)
	}
	if code := do("GET", "/api/v3/agents/victim", nil); code != http.StatusOK {
		t.Errorf("the smuggled DELETE ran: GET answers %d", code)
	}
	if code := do("GET", "/api/v3/agents/x", nil); code != http.StatusNotFound {
		t.Errorf("the smuggling request ran: GET answers %d", code)
	}

	codes, closed = exchange("POST /api/v3/agents HTTP/1.1\r\n" + auth + "Content-Type: application/json\r\n" +
		"Transfer-Encoding: chunked\r\n\r\n" + chunked + "GET /api/v3/agents/x HTTP/1.1\r\n" + auth + "\r\n")
	if len(codes) != 2 || codes[0] != http.StatusCreated || codes[1] != http.StatusOK || closed {
		t.Errorf("chunked request, then another: answers %v, closed %v; want 201 200 on an open connection", codes, closed)
	}
}
