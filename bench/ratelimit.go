package bench

import (
	"context"
	"time"

	"golang.org/x/time/rate"
)

// tokenBucket limits an actor's send rate to rate bytes per second with
// golang.org/x/time/rate: a burst of one batch of credit (so an idle actor
// cannot save up a long burst), and each take reserves its bytes and
// sleeps until the reservation is due, so the average is the rate whatever
// the batch size. A take larger than the burst raises the burst to it, so
// it still goes through (at the rate). now and sleep are the limiter's
// clock, replaced in tests. It is owned by one actor.
type tokenBucket struct {
	lim   *rate.Limiter
	now   func() time.Time
	sleep func(context.Context, time.Duration) error
}

// newTokenBucket starts with burst bytes of credit.
func newTokenBucket(bytesPerSec uint64, burst uint64) *tokenBucket {
	return &tokenBucket{lim: rate.NewLimiter(rate.Limit(bytesPerSec), int(burst)), now: time.Now, sleep: pause}
}

// take spends n bytes of credit, sleeping until they are due.
func (b *tokenBucket) take(ctx context.Context, n int) error {
	now := b.now()
	if n > b.lim.Burst() {
		b.lim.SetBurstAt(now, n)
	}
	d := b.lim.ReserveN(now, n).DelayFrom(now)
	if d <= 0 {
		return nil
	}
	return b.sleep(ctx, d)
}
