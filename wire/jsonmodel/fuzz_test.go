package jsonmodel

import (
	"encoding/json"
	"testing"
)

// Every body decoder returns an error, never panics, on any input
// (DESIGN.md "Errors and bad input"); a body that decodes converts to its
// binary request without panicking either.

var bodySeeds = []string{
	`{"username":"iggy","password":"iggy"}`, `{"token":"x"}`, `{"name":"s"}`, `{"name":"s","options":{"a":"b"}}`,
	`{"name":"topic1","partitions_count":1,"compression_algorithm":"none","max_topic_size":0,"message_expiry":0}`,
	`{"partitions_count":3}`, `{"username":"u","password":"p","status":"active","permissions":null}`,
	`{"current_password":"a","new_password":"b"}`, `{"name":"t","expiry":0}`, `{"consumer_id":"c","partition_id":0,"offset":1}`,
	`{"compression":"Deflated","snapshot_types":["All"]}`,
	`{"permissions":{"global":{"manage_servers":true,"read_servers":true,"manage_users":true,"read_users":true,"manage_streams":true,"read_streams":true,"manage_topics":true,"read_topics":true,"poll_messages":true,"send_messages":true},"streams":{"0":{"manage_stream":true,"read_stream":true,"manage_topics":true,"read_topics":true,"poll_messages":true,"send_messages":true,"topics":{"1":{"manage_topic":true,"read_topic":true,"poll_messages":true,"send_messages":true}}}}}}`,
	`{"partitioning":{"kind":"partition_id","value":"AAAAAA=="},"messages":[{"id":"00000000-0000-0000-0000-000000000001","payload":"aGVsbG8=","user_headers":[{"key":{"kind":"string","value":"a2V5"},"value":{"kind":"uint32","value":"KgAAAA=="}}]}]}`,
	`{"partitioning":{"kind":"balanced","value":""},"messages":[{"payload":"eA==","user_headers":"AgAAAAFrAgAAAAF2"}]}`,
	`{`, ``, `[]`, `null`, `{"messages":null}`,
}

func FuzzDecodeBodies(f *testing.F) {
	for _, s := range bodySeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		targets := []any{&LoginUser{}, &Token{}, &CreateStream{}, &UpdateStream{}, &CreateTopic{}, &UpdateTopic{},
			&CreatePartitions{}, &CreateConsumerGroup{}, &CreateUser{}, &UpdateUser{}, &ChangePassword{},
			&UpdatePermissions{}, &CreatePersonalAccessToken{}, &StoreConsumerOffset{}, &Snapshot{}, &SendMessages{}}
		for _, v := range targets {
			if Decode(b, v) != nil {
				continue
			}
			switch x := v.(type) {
			case *CreateTopic:
				x.ToWire(wireID)
			case *UpdateTopic:
				x.ToWire(wireID, wireID)
			case *CreateUser:
				x.Permissions.ToWire()
			case *UpdatePermissions:
				x.Permissions.ToWire()
			case *Snapshot:
				_, _ = x.ToWire()
			case *SendMessages:
				_, _, _ = x.ToWire(1)
			}
		}
	})
}

// The path/identifier parser (http.md 2.2.2) and the byte-size reader.
func FuzzParseIdentifier(f *testing.F) {
	for _, s := range []string{"0", "+7", "0042", "4294967295", "4294967296", "stream1", "", "a/b", string(make([]byte, 256))} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		id, err := ParseIdentifier(s)
		if err == nil && id.Validate() != nil {
			t.Fatalf("%q parsed to an invalid identifier %v", s, id)
		}
		_, _ = ParseByteSize(s)
		_, _ = ParseMessageID(s)
	})
}

// Reply models read back what they write (the SDK's HTTP transport relies
// on it), and reading any input never panics.
func FuzzReplyModels(f *testing.F) {
	f.Add([]byte(`{"partition_id":0,"current_offset":1,"count":1,"messages":[{"header":{"checksum":1,"id":340282366920938463463374607431768211455,"offset":0,"timestamp":1,"origin_timestamp":1,"user_headers_length":0,"payload_length":1,"reserved":0},"payload":"eA==","user_headers":[]}]}`))
	f.Add([]byte(`{"id":0,"created_at":1,"name":"s","size":"1.5 KB","messages_count":0,"topics_count":0,"topics":[],"options":{}}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		var p PolledMessages
		if json.Unmarshal(b, &p) == nil {
			_, _ = p.ToWire()
		}
		var s StreamDetails
		if json.Unmarshal(b, &s) == nil {
			s.ToWire()
		}
		var u UserInfoDetails
		if json.Unmarshal(b, &u) == nil {
			u.ToWire()
		}
	})
}
