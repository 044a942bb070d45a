package config

import (
	"testing"
	"time"
)

// [login] has defaults, and every key takes an IGGY_* override.
func TestLoginSectionDefaultsAndOverrides(t *testing.T) {
	c, warns, err := Load("", nil)
	if err != nil || len(warns) != 0 {
		t.Fatalf("Load: %v %v", err, warns)
	}
	l := c.Login
	if l.VerifyWorkers != 0 || l.VerifyQueue != 64 || !l.Throttle.Enabled || l.Throttle.BaseDelay.D() != 100*time.Millisecond ||
		l.Throttle.MaxDelay.D() != 5*time.Second || l.Throttle.QuietPeriod.D() != 10*time.Second ||
		l.Throttle.AddressFreeFailures != 5 || l.Throttle.MaxInFlightPerAddress != 1 || l.Throttle.MaxTracked != 16384 {
		t.Errorf("login defaults %+v", l)
	}
	p := writeFile(t, "[login]\nverify_queue = 8\n[login.throttle]\nmax_delay = \"2s\"\n")
	c, warns, err = Load(p, []string{
		"IGGY_LOGIN_VERIFY_WORKERS=3", "IGGY_LOGIN_THROTTLE_ENABLED=false", "IGGY_LOGIN_THROTTLE_BASE_DELAY=50ms",
		"IGGY_LOGIN_THROTTLE_QUIET_PERIOD=1m", "IGGY_LOGIN_THROTTLE_ADDRESS_FREE_FAILURES=0",
		"IGGY_LOGIN_THROTTLE_MAX_IN_FLIGHT_PER_ADDRESS=2", "IGGY_LOGIN_THROTTLE_MAX_TRACKED=100",
	})
	if err != nil || len(warns) != 0 {
		t.Fatalf("Load: %v %v", err, warns)
	}
	l = c.Login
	if l.VerifyWorkers != 3 || l.VerifyQueue != 8 || l.Throttle.Enabled || l.Throttle.BaseDelay.D() != 50*time.Millisecond ||
		l.Throttle.MaxDelay.D() != 2*time.Second || l.Throttle.QuietPeriod.D() != time.Minute ||
		l.Throttle.AddressFreeFailures != 0 || l.Throttle.MaxInFlightPerAddress != 2 || l.Throttle.MaxTracked != 100 {
		t.Errorf("login overrides %+v", l)
	}
}
