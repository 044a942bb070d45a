package httpplane

import (
	"testing"
	"time"

	"iggynode/config"
)

func testIssuer(t *testing.T, now func() time.Time) *issuer {
	t.Helper()
	cfg := config.Default().HTTP.JWT
	cfg.EncodingSecret = "test-secret-test-secret-test-secret"
	i, _, err := newIssuer(cfg, t.TempDir(), "", now)
	if err != nil {
		t.Fatal(err)
	}
	return i
}

func TestIssueAndCheck(t *testing.T) {
	i := testIssuer(t, nil)
	tok, _, err := i.issue(0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := i.check(tok); err != nil {
		t.Fatal(err)
	}
}
