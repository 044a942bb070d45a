package httpplane_test

import "testing"

func TestSmoke(t *testing.T) {
	n := startNode(t)
	tok := login(t, n.base, "iggy", "iggy")
	r := do(t, n.base, "POST", "/streams", tok, map[string]any{"name": "stream1"})
	t.Logf("%d %s", r.status, r.body)
	r = do(t, n.base, "POST", "/streams/0/topics", tok, map[string]any{"name": "topic1", "partitions_count": 1, "compression_algorithm": "none", "max_topic_size": 0, "message_expiry": 0})
	t.Logf("%d %s", r.status, r.body)
	r = do(t, n.base, "POST", "/streams/0/topics/0/messages", tok, `{"partitioning":{"kind":"partition_id","value":"AAAAAA=="},"messages":[{"id":0,"payload":"aGVsbG8="},{"id":0,"payload":"d29ybGQ=","user_headers":[{"key":{"kind":"string","value":"a2V5XzE="},"value":{"kind":"string","value":"dmFsdWUgMQ=="}},{"key":{"kind":"string","value":"bg=="},"value":{"kind":"uint32","value":"KgAAAA=="}}]}]}`)
	t.Logf("%d %v %s", r.status, r.header, r.body)
	r = do(t, n.base, "GET", "/streams/0/topics/0/messages?consumer_id=1&partition_id=0&kind=offset&value=0&count=10&auto_commit=false", tok, nil)
	t.Logf("%d %s", r.status, r.body)
	r = do(t, n.base, "GET", "/streams", tok, nil)
	t.Logf("%d %s", r.status, r.body)
	r = do(t, n.base, "GET", "/users/me", tok, nil)
	t.Logf("%d %s", r.status, r.body)
}
