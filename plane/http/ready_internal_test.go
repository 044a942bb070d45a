package httpplane

import (
	"io"
	"net/http/httptest"
	"sync/atomic"
	"testing"
)

// GET /ready answers 503 until the node is ready, then 200.
func TestReadinessRoute(t *testing.T) {
	var ready atomic.Bool
	h := readiness(ready.Load)
	get := func() (int, string) {
		t.Helper()
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("GET", ReadyRoute, nil))
		b, _ := io.ReadAll(rec.Result().Body)
		return rec.Code, string(b)
	}
	if code, body := get(); code != 503 || body != "catching up" {
		t.Errorf("before: %d %q", code, body)
	}
	ready.Store(true)
	if code, body := get(); code != 200 || body != "ready" {
		t.Errorf("after: %d %q", code, body)
	}
}
