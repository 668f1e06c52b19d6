package congestion_test

import (
	"bufio"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"sync"
	"testing"
	"time"
)

// gridRecord is one cell's result as UDT_SIM_JSON keeps it, one JSON object per line: a long
// grid run appends each cell as it ends, and a later run with the same file reuses every cell
// it finds there (same controller, bottleneck kind and steady window, at least as many runs),
// so an interrupted grid resumes and a finished one prints its tables again without running.
type gridRecord struct {
	Controller string
	Kind       string // the bottleneck kind's name, checked against Cell.Kind's
	Steady     time.Duration
	Cell       gridCell
	Result     cellResult
}

type gridStore struct {
	mu   sync.Mutex
	path string
	have map[gridRecordKey]cellResult
}

type gridRecordKey struct {
	ctl    string
	steady time.Duration
	cell   gridCell
}

// openGridStore reads UDT_SIM_JSON's records, if the variable is set (nil store otherwise).
func openGridStore(t *testing.T) *gridStore {
	path := os.Getenv("UDT_SIM_JSON")
	if path == "" {
		return nil
	}
	s := &gridStore{path: path, have: map[gridRecordKey]cellResult{}}
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return s
	}
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	kinds := gridKinds()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var r gridRecord
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("UDT_SIM_JSON %s: %v", path, err)
		}
		if r.Cell.Kind < 0 || r.Cell.Kind >= len(kinds) || kinds[r.Cell.Kind].Name != r.Kind {
			continue // a record of another grid layout
		}
		s.have[gridRecordKey{r.Controller, r.Steady, r.Cell}] = r.Result
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return s
}

// lookup returns a recorded result of at least runs runs.
func (s *gridStore) lookup(ctl string, steady time.Duration, c gridCell, runs int) (cellResult, bool) {
	if s == nil {
		return cellResult{}, false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.have[gridRecordKey{ctl, steady, c}]
	return r, ok && r.Runs >= runs
}

// save appends a cell's result.
func (s *gridStore) save(t *testing.T, ctl string, steady time.Duration, c gridCell, r cellResult) {
	if s == nil {
		return
	}
	b, err := json.Marshal(gridRecord{Controller: ctl, Kind: gridKinds()[c.Kind].Name, Steady: steady, Cell: c, Result: r})
	if err != nil {
		t.Fatal(err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	f, err := os.OpenFile(s.path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		t.Error(err)
		return
	}
	defer f.Close()
	if _, err := f.Write(append(b, '\n')); err != nil {
		t.Error(err)
	}
	s.have[gridRecordKey{ctl, steady, c}] = r
}
