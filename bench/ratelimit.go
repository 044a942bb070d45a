package bench

import (
	"context"
	"time"
)

// tokenBucket limits an actor's send rate to rate bytes per second. It holds
// at most burst bytes of credit (so an idle actor cannot save up a long
// burst) and lets a take go into debt: a batch larger than the credit is
// sent at once and the actor then sleeps the debt off. That keeps the
// average at the rate whatever the batch size, and a batch larger than the
// burst still goes through. It is owned by one actor (not safe for
// concurrent use).
type tokenBucket struct {
	rate   float64 // bytes per second
	burst  float64
	tokens float64
	last   time.Time
	now    func() time.Time
	sleep  func(context.Context, time.Duration) error
}

// newTokenBucket starts with burst bytes of credit.
func newTokenBucket(bytesPerSec uint64, burst uint64) *tokenBucket {
	b := &tokenBucket{rate: float64(bytesPerSec), burst: float64(burst), now: time.Now, sleep: pause}
	b.tokens, b.last = b.burst, b.now()
	return b
}

// take spends n bytes of credit, sleeping off any debt it leaves.
func (b *tokenBucket) take(ctx context.Context, n int) error {
	now := b.now()
	b.tokens = min(b.burst, b.tokens+now.Sub(b.last).Seconds()*b.rate)
	b.last = now
	b.tokens -= float64(n)
	if b.tokens >= 0 {
		return nil
	}
	return b.sleep(ctx, time.Duration(-b.tokens/b.rate*float64(time.Second)))
}
