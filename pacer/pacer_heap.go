package pacer

// flowHeap is a binary min-heap of queued handles ordered by departure time (Handle.at).
// Each handle knows its index, so fix and remove are O(log n). All methods need Pacer.mu.
type flowHeap []*Handle

func (hp flowHeap) less(i, j int) bool { return hp[i].at.Before(hp[j].at) }

func (hp flowHeap) swap(i, j int) {
	hp[i], hp[j] = hp[j], hp[i]
	hp[i].idx = i
	hp[j].idx = j
}

func (hp *flowHeap) push(h *Handle) {
	h.idx = len(*hp)
	*hp = append(*hp, h)
	hp.up(h.idx)
}

// pop removes and returns the earliest handle; the heap must not be empty.
func (hp *flowHeap) pop() *Handle {
	return hp.remove(0)
}

// remove takes the handle at index i out of the heap and returns it.
func (hp *flowHeap) remove(i int) *Handle {
	old := *hp
	last := len(old) - 1
	h := old[i]
	if i != last {
		old.swap(i, last)
	}
	old[last] = nil
	*hp = old[:last]
	if i != last {
		hp.fix(i)
	}
	h.idx = -1
	return h
}

// fix restores the heap order after the time of the handle at index i changed.
func (hp flowHeap) fix(i int) {
	if !hp.down(i) {
		hp.up(i)
	}
}

func (hp flowHeap) up(i int) {
	for i > 0 {
		parent := (i - 1) / 2
		if !hp.less(i, parent) {
			return
		}
		hp.swap(i, parent)
		i = parent
	}
}

// down sifts the element at i toward the leaves and reports whether it moved.
func (hp flowHeap) down(i int) bool {
	start, n := i, len(hp)
	for {
		l := 2*i + 1
		if l >= n {
			break
		}
		c := l
		if r := l + 1; r < n && hp.less(r, l) {
			c = r
		}
		if !hp.less(c, i) {
			break
		}
		hp.swap(i, c)
		i = c
	}
	return i > start
}
