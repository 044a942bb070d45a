package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const r0 = `{"trace_id":"aa","span_id":"01","name":"vsr.op","start_ns":1000000,"end_ns":9000000,"resource":{"iggy.replica":0},"attributes":{"iggy.group":3,"iggy.op":1,"iggy.view":0},"events":[{"name":"prepared","time_ns":1000000},{"name":"journaled","time_ns":1000000},{"name":"forwarded","time_ns":1000000,"attributes":{"iggy.peer":1}},{"name":"prepare_ok","time_ns":4000000,"attributes":{"iggy.peer":1}},{"name":"committed","time_ns":4000000},{"name":"applied","time_ns":5000000}]}
`
const r1 = `{"trace_id":"aa","span_id":"02","name":"vsr.op","start_ns":2000000,"end_ns":9000000,"attributes":{"iggy.replica":1,"iggy.group":3,"iggy.op":1,"iggy.view":0},"events":[{"name":"journaled","time_ns":2000000},{"name":"committed","time_ns":8000000},{"name":"applied","time_ns":9000000}]}
{"name":"vsr.view_change","start_ns":10000000,"end_ns":30000000,"attributes":{"iggy.replica":1,"iggy.group":3,"iggy.view":1,"iggy.reason":"timeout","iggy.outcome":"normal"}}
`

func TestDirectoryTextAndHTML(t *testing.T) {
	dir := t.TempDir()
	for name, body := range map[string]string{"n0.jsonl": r0, "n1.jsonl": r1, "notes.txt": "not a span file"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	out := filepath.Join(t.TempDir(), "t.html")
	var b bytes.Buffer
	if err := run([]string{"--group", "3", "--html", out, dir}, &b); err != nil {
		t.Fatal(err)
	}
	text := b.String()
	for _, want := range []string{"stream 0 / topic 0 / partition 3 (group 3): replicas [0 1]", "r1.ok", "view_change", "timeout", "commit latency mean 3.0 ms"} {
		if !strings.Contains(text, want) {
			t.Fatalf("text lacks %q:\n%s", want, text)
		}
	}
	page, err := os.ReadFile(out)
	if err != nil || !bytes.Contains(page, []byte("<svg")) {
		t.Fatalf("html: %v", err)
	}
	b.Reset()
	if err := run([]string{"--group", "4", filepath.Join(dir, "n0.jsonl")}, &b); err != nil || !strings.Contains(b.String(), "no ops") {
		t.Fatalf("other group: %v %q", err, b.String())
	}
}

func TestUnreadableInputFails(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.jsonl")
	if err := os.WriteFile(bad, []byte(r0+"{oops\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{bad}, "bad.jsonl: spanfile: line 2"},
		{[]string{filepath.Join(dir, "missing.jsonl")}, "no such file"},
		{[]string{t.TempDir()}, "no *.jsonl"},
		{nil, "no span files"},
		{[]string{"--group", "x", bad}, "--group"},
		{[]string{"--nope", bad}, "usage"},
	} {
		err := run(tc.args, &bytes.Buffer{})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: err %v, want %q", tc.args, err, tc.want)
		}
	}
}
