package udprelay

import (
	"container/heap"
	"sync"
	"time"
)

// delayLine runs functions at given times on one goroutine (run), in (time, insertion) order.
type delayLine struct {
	mu    sync.Mutex
	items itemHeap
	seq   uint64
	kick  chan struct{} // capacity 1: the earliest item changed
	done  <-chan struct{}
}

type item struct {
	at   time.Time
	seq  uint64
	fn   func()
	lock sync.Locker // held while fn runs
}

func newDelayLine(done <-chan struct{}) *delayLine {
	return &delayLine{kick: make(chan struct{}, 1), done: done}
}

// add schedules fn to run at at with lock held. Safe from any goroutine.
func (dl *delayLine) add(at time.Time, fn func(), lock sync.Locker) {
	dl.mu.Lock()
	dl.seq++
	heap.Push(&dl.items, item{at: at, seq: dl.seq, fn: fn, lock: lock})
	first := dl.items[0].seq == dl.seq
	dl.mu.Unlock()
	if first {
		select {
		case dl.kick <- struct{}{}:
		default:
		}
	}
}

// run serves the line until done is closed; pending items are discarded.
func (dl *delayLine) run() {
	t := time.NewTimer(time.Hour)
	defer t.Stop()
	for {
		now := time.Now()
		dl.mu.Lock()
		for len(dl.items) > 0 && !dl.items[0].at.After(now) {
			it := heap.Pop(&dl.items).(item)
			dl.mu.Unlock()
			it.lock.Lock()
			it.fn()
			it.lock.Unlock()
			dl.mu.Lock()
		}
		var wait <-chan time.Time
		if len(dl.items) > 0 {
			t.Reset(dl.items[0].at.Sub(now))
			wait = t.C
		} else {
			t.Stop()
		}
		dl.mu.Unlock()
		select {
		case <-dl.done:
			return
		case <-dl.kick:
		case <-wait:
		}
	}
}

type itemHeap []item

func (h itemHeap) Len() int { return len(h) }
func (h itemHeap) Less(i, j int) bool {
	if h[i].at.Equal(h[j].at) {
		return h[i].seq < h[j].seq
	}
	return h[i].at.Before(h[j].at)
}
func (h itemHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *itemHeap) Push(x any)   { *h = append(*h, x.(item)) }
func (h *itemHeap) Pop() any {
	old := *h
	it := old[len(old)-1]
	old[len(old)-1] = item{}
	*h = old[:len(old)-1]
	return it
}
