package framebuf

import (
	"testing"
)

// Every pooled size gets a buffer at least as long and at most a
// sixteenth larger, classes grow with the size, and sizes outside the
// pooled range are not pooled.
func TestClassesFitTheFrame(t *testing.T) {
	for _, n := range []int{0, 1, 1 << 16, 1<<27 + 1, 1 << 30} {
		if _, _, ok := class(n); ok {
			t.Fatalf("size %d is pooled", n)
		}
	}
	prevClass, prevSize := -1, 0
	for n := 1<<16 + 1; n <= 1<<27; n += 1 + n/97 {
		c, size, ok := class(n)
		if !ok {
			t.Fatalf("size %d not pooled", n)
		}
		if size < n || float64(size) > float64(n)*1.0625+1 {
			t.Fatalf("size %d gets a buffer of %d", n, size)
		}
		if c < prevClass || (c == prevClass && size != prevSize) || (c > prevClass && size <= prevSize) {
			t.Fatalf("size %d: class %d (%d bytes) after class %d (%d bytes)", n, c, size, prevClass, prevSize)
		}
		if c >= classCount {
			t.Fatalf("size %d: class %d of %d", n, c, classCount)
		}
		prevClass, prevSize = c, size
	}
	// A frame of 1000 messages of 1 KB (about 1.02 MiB) takes 1 1/16 MiB.
	if _, size, _ := class(1_064_256); size != 1_114_112 {
		t.Fatalf("a 1 MiB batch frame gets %d bytes", size)
	}
}

// A buffer comes back only after its last reference, is handed out
// again, and is poisoned when asked; its Bytes cannot be appended to in
// place.
func TestReleasedOnceNobodyHoldsIt(t *testing.T) {
	SetPoison(true)
	t.Cleanup(func() { SetPoison(false) })
	const n = 300_000
	b := Get(n)
	if len(b.Bytes()) != n || cap(b.Bytes()) != n {
		t.Fatalf("Bytes len %d cap %d, want %d", len(b.Bytes()), cap(b.Bytes()), n)
	}
	data := b.Bytes()
	for i := range data {
		data[i] = 7
	}
	pin := b.Pin()
	before := ReadStats()
	b.Release()
	if data[0] != 7 || ReadStats().Recycled != before.Recycled {
		t.Fatal("released while pinned")
	}
	pin.Unpin()
	if ReadStats().Recycled != before.Recycled+1 {
		t.Fatal("not recycled after its last reference")
	}
	if data[0] != PoisonByte || data[n-1] != PoisonByte {
		t.Fatal("released buffer not poisoned")
	}
	// sync.Pool may drop a Put (it does so at random under -race), so
	// hand buffers back until one comes out again.
	reused := false
	for range 100 {
		x := Get(n)
		if x == b || ReadStats().Reused > before.Reused {
			reused = true
		}
		x.Release()
		if reused {
			break
		}
	}
	if !reused {
		t.Fatal("no buffer was handed out again")
	}
	if Get(1000) != nil || Get(1<<28) != nil {
		t.Fatal("unpooled sizes came from the pool")
	}
	if !b.Holds(b.Bytes()[10:20]) || b.Holds(make([]byte, 10)) {
		t.Fatal("Holds does not tell the buffer's bytes from others")
	}
}

// Releasing more often than held, or pinning a released buffer, panics:
// either would hand reused bytes to a reader.
func TestMisuseIsCaught(t *testing.T) {
	mustPanic := func(name string, f func()) {
		t.Helper()
		defer func() {
			if recover() == nil {
				t.Fatalf("%s did not panic", name)
			}
		}()
		f()
	}
	b := Get(100_000)
	b.Release()
	mustPanic("a second release", b.Release)
	c := Get(100_000)
	c.Release()
	mustPanic("a pin after the last release", func() { c.Pin() })
}
