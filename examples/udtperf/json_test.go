package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// readmeSchema reads the JSON ROW table of udtperf's section in the repository's README: the
// documented row keys and the keys of an intervals element.
func readmeSchema(t *testing.T) (rowKeys, intervalKeys []string) {
	t.Helper()
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatalf("README: %v", err)
	}
	text := string(b)
	i := strings.Index(text, "ROW fields")
	if i < 0 {
		t.Fatal("README has no udtperf ROW table")
	}
	lines := strings.Split(text[i:], "\n")
	for _, l := range lines[1:] {
		if !strings.HasPrefix(l, "|") {
			if len(rowKeys) > 0 {
				break // end of the table
			}
			continue
		}
		cols := strings.Split(l, "|")
		field := strings.TrimSpace(cols[1])
		if field == "field" || strings.HasPrefix(field, "---") {
			continue
		}
		for k := range strings.SplitSeq(field, ",") {
			rowKeys = append(rowKeys, strings.TrimSpace(k))
		}
		if field == "intervals" {
			m := regexp.MustCompile(`\{([^}]*)\}`).FindStringSubmatch(l)
			if m == nil {
				t.Fatalf("README's intervals row names no keys: %s", l)
			}
			for k := range strings.SplitSeq(m[1], ",") {
				intervalKeys = append(intervalKeys, strings.TrimSpace(k))
			}
		}
	}
	if len(rowKeys) < 10 || len(intervalKeys) == 0 {
		t.Fatalf("README's ROW table not understood: %q, intervals %q", rowKeys, intervalKeys)
	}
	return rowKeys, intervalKeys
}

// sortedKeys returns m's keys, sorted.
func sortedKeys(m map[string]any) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}

// checkRowKeys decodes every row of a {"results": [...]} document into a map and checks that
// its keys are exactly the README's (so that none is omitted), those of intervals too. It
// returns the decoded rows.
func checkRowKeys(t *testing.T, doc []byte) []map[string]any {
	t.Helper()
	rowKeys, ivKeys := readmeSchema(t)
	slices.Sort(rowKeys)
	slices.Sort(ivKeys)
	var d struct{ Results []map[string]any }
	if err := json.Unmarshal(doc, &d); err != nil {
		t.Fatalf("JSON %v: %s", err, doc)
	}
	for _, r := range d.Results {
		if got := sortedKeys(r); !slices.Equal(got, rowKeys) {
			t.Errorf("row keys %q, README documents %q", got, rowKeys)
		}
		ivs, _ := r["intervals"].([]any)
		for _, iv := range ivs {
			m, _ := iv.(map[string]any)
			if got := sortedKeys(m); !slices.Equal(got, ivKeys) {
				t.Errorf("interval keys %q, README documents %q", got, ivKeys)
			}
		}
	}
	return d.Results
}

// TestJSONRowKeys: every documented key is present in every kind of row, null where the
// README says so.
func TestJSONRowKeys(t *testing.T) {
	tcp := makeRow(&report{Protocol: "tcp", Bytes: 10, SHA256: "ab", ElapsedNs: 1e9, CPUNs: -1},
		&report{Protocol: "tcp", Bytes: 10, SHA256: "ab", ElapsedNs: 1e9, CPUNs: -1})
	tcp.Direction = "client->server"
	udt := makeRow(&report{Protocol: "udt", Backend: "hybrid", CC: "udt", Bytes: 10, SHA256: "ab", ElapsedNs: 1e9},
		&report{Bytes: 10, SHA256: "ab", ElapsedNs: 1e9})
	udt.Direction, udt.File = "server->client", new("f.bin")
	udt.Intervals = []Interval{{Start: 0, End: 1, Bytes: 10, Mbps: 0.00008}}
	failed := failedRow("udt", "spin", "fixed:100mbit", true, errors.New("boom"))
	var buf bytes.Buffer
	if err := writeJSON(&buf, []Row{tcp, udt, failed}); err != nil {
		t.Fatal(err)
	}
	rows := checkRowKeys(t, buf.Bytes())
	if len(rows) != 3 {
		t.Fatalf("%d rows", len(rows))
	}
	want := []map[string]any{
		{"cc": nil, "strict": nil, "file": nil, "error": nil, "intervals": nil, "pkts_per_wake": nil,
			"backend": "", "direction": "client->server", "sha256_ok": true},
		{"cc": "udt", "strict": false, "file": "f.bin", "error": nil, "backend": "hybrid"},
		{"cc": "fixed:100mbit", "strict": true, "file": nil, "error": "boom", "intervals": nil,
			"direction": "client->server", "sha256_ok": false},
	}
	for i, w := range want {
		for k, v := range w {
			if got := rows[i][k]; got != v {
				t.Errorf("row %d: %s = %#v, want %#v", i, k, got, v)
			}
		}
	}
	// A single line (the server's) has the same keys.
	buf.Reset()
	if err := writeJSONLine(&buf, tcp); err != nil {
		t.Fatal(err)
	}
	checkRowKeys(t, buf.Bytes())
}
