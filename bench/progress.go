package bench

import (
	"fmt"
	"io"
	"strings"
	"sync"
	"time"
)

// startProgress writes a line to w every interval while the actors run:
// per group, the messages measured so far and their MB/s since started. It
// returns the function that stops it (and waits for the writer). A nil w
// does nothing.
func startProgress(w io.Writer, interval time.Duration, started time.Time, actors []*actor) (stop func()) {
	if w == nil {
		return func() {}
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case now := <-t.C:
				fmt.Fprintln(w, progressLine(now.Sub(started), actors))
			}
		}
	})
	return func() {
		close(done)
		wg.Wait()
	}
}

// progressLine is "bench: 3s: producers 1200000 msgs 402.1 MB/s | ...".
func progressLine(elapsed time.Duration, actors []*actor) string {
	var parts []string
	for _, kind := range []string{KindProducer, KindConsumer, KindProducingConsumer} {
		var messages, bytes uint64
		n := 0
		for _, a := range actors {
			if a.kind == kind {
				n++
				messages += a.liveMessages.Load()
				bytes += a.liveBytes.Load()
			}
		}
		if n == 0 {
			continue
		}
		mb, _ := Throughput(bytes, messages, elapsed)
		parts = append(parts, fmt.Sprintf("%ss %d msgs %.1f MB/s", kind, messages, mb))
	}
	return fmt.Sprintf("bench: %s: %s", elapsed.Round(time.Second), strings.Join(parts, " | "))
}
