package config

import (
	"encoding/base64"
	"strings"
	"testing"
)

// Each rule under which the reference server refuses to boot (11.3,
// replica-plane.md 10), and the node's own refusals, set through the
// environment: Load refuses, naming the key.
func TestLoadRefusesWhatTheReferenceServerRefuses(t *testing.T) {
	key32 := base64.StdEncoding.EncodeToString([]byte("0123456789abcdef0123456789abcdef"))
	secret := "0123456789abcdef0123456789abcdef"
	cases := []struct {
		name string
		env  []string
		want string
	}{
		{"archive_expired", []string{"IGGY_SYSTEM_SEGMENT_ARCHIVE_EXPIRED=true"}, "system.segment.archive_expired"},
		{"recreate_missing_state", []string{"IGGY_SYSTEM_RECOVERY_RECREATE_MISSING_STATE=true"}, "system.recovery.recreate_missing_state"},
		{"encryption without a key", []string{"IGGY_SYSTEM_ENCRYPTION_ENABLED=true"}, "needs system.encryption.key"},
		{"encryption key not base64", []string{"IGGY_SYSTEM_ENCRYPTION_ENABLED=true", "IGGY_SYSTEM_ENCRYPTION_KEY=not*base64!"}, "not valid base64"},
		{"encryption key of 16 bytes", []string{"IGGY_SYSTEM_ENCRYPTION_ENABLED=true",
			"IGGY_SYSTEM_ENCRYPTION_KEY=" + base64.StdEncoding.EncodeToString(make([]byte, 16))}, "decodes to 16 bytes"},
		{"http jwt algorithm", []string{"IGGY_HTTP_JWT_ALGORITHM=RS256"}, "http.jwt.algorithm"},
		{"http jwt secrets differ", []string{"IGGY_HTTP_JWT_ENCODING_SECRET=aaaa", "IGGY_HTTP_JWT_DECODING_SECRET=bbbb"}, "differ"},
		{"http jwt base64 secret", []string{"IGGY_HTTP_JWT_ENCODING_SECRET=%%%", "IGGY_HTTP_JWT_USE_BASE64_SECRET=true"}, "base64"},
		{"http jwt expiry", []string{"IGGY_HTTP_JWT_ACCESS_TOKEN_EXPIRY=soon"}, "access_token_expiry"},
		{"cors wildcard not first", []string{"IGGY_HTTP_CORS_ALLOWED_ORIGINS=http://a.example, *"}, "first entry"},
		{"cors unknown method", []string{"IGGY_HTTP_CORS_ALLOWED_METHODS=GET, FETCH"}, "allowed_methods"},
		{"cors credentials with wildcard", []string{"IGGY_HTTP_CORS_ALLOW_CREDENTIALS=true"}, "allow_credentials"},
		{"quic mtu", []string{"IGGY_QUIC_INITIAL_MTU=1000 B"}, "quic.initial_mtu"},
		{"quic stream window", []string{"IGGY_QUIC_STREAM_RECEIVE_WINDOW=128 MiB"}, "quic.stream_receive_window"},
		{"websocket message size", []string{"IGGY_WEBSOCKET_MAX_MESSAGE_SIZE=128 MiB"}, "websocket.max_message_size"},
		{"metrics endpoint", []string{"IGGY_HTTP_METRICS_ENDPOINT=metrics"}, "http.metrics.endpoint"},
		{"cleaner interval", []string{"IGGY_DATA_MAINTENANCE_MESSAGES_INTERVAL=0 s"}, "data_maintenance.messages.interval"},
		{"tokens per user", []string{"IGGY_PERSONAL_ACCESS_TOKEN_MAX_TOKENS_PER_USER=0"}, "max_tokens_per_user"},
		{"metadata depth", []string{"IGGY_METADATA_PREPARE_QUEUE_DEPTH=128"}, "metadata.prepare_queue_depth"},
		{"journal slots low", []string{"IGGY_METADATA_JOURNAL_SLOTS=255"}, "metadata.journal_slots"},
		{"journal slots high", []string{"IGGY_METADATA_JOURNAL_SLOTS=1048577"}, "metadata.journal_slots"},
		{"clients table", []string{"IGGY_METADATA_CLIENTS_TABLE_MAX=1"}, "metadata.clients_table_max"},
		{"partition depth", []string{"IGGY_PARTITION_PREPARE_QUEUE_DEPTH=0"}, "partition.prepare_queue_depth"},
		{"ring capacity", []string{"IGGY_PARTITION_EVICTED_RING_CAPACITY=65537"}, "partition.evicted_ring_capacity"},
		{"ring bytes", []string{"IGGY_PARTITION_EVICTED_RING_BYTES_MAX=257 MiB"}, "partition.evicted_ring_bytes_max"},
		{"served transfer cache", []string{"IGGY_PARTITION_TRANSFER_SERVED_CACHE_BYTES_MAX=65 GiB"}, "partition.transfer_served_cache_bytes_max"},
		{"max batch", []string{"IGGY_MESSAGE_BUS_MAX_BATCH=513"}, "message_bus.max_batch"},
		{"max message size", []string{"IGGY_MESSAGE_BUS_MAX_MESSAGE_SIZE=256 B"}, "message_bus.max_message_size"},
		{"peer queue vs chunk", []string{"IGGY_MESSAGE_BUS_PEER_QUEUE_CAPACITY=128"}, "message_bus.peer_queue_capacity"},
		{"heartbeat floor", []string{"IGGY_CLUSTER_HEARTBEAT_TIMEOUT=1s"}, "cluster.heartbeat_timeout"},
		{"heartbeat vs commit", []string{"IGGY_CLUSTER_HEARTBEAT_TIMEOUT=3s", "IGGY_CLUSTER_COMMIT_BROADCAST_INTERVAL=1s"}, "cluster.heartbeat_timeout"},
		{"zero interval", []string{"IGGY_CLUSTER_PREPARE_RETRANSMIT_INTERVAL=0s"}, "cluster.prepare_retransmit_interval"},
		{"status timeout", []string{"IGGY_CLUSTER_VIEW_CHANGE_STATUS_TIMEOUT=1s"}, "cluster.view_change_status_timeout"},
		{"probe attempts", []string{"IGGY_CLUSTER_VIEW_PROBE_ATTEMPTS_MAX=101"}, "cluster.view_probe_attempts_max"},
		{"repair chunk", []string{"IGGY_CLUSTER_REPAIR_CHUNK_MAX=0"}, "cluster.repair_chunk_max"},
		{"wedged timeout", []string{"IGGY_CLUSTER_SUPERBLOCK_WEDGED_FATAL_TIMEOUT=10s"}, "cluster.superblock_wedged_fatal_timeout"},
		{"short secret", []string{"IGGY_CLUSTER_AUTH_ENABLED=true", "IGGY_CLUSTER_AUTH_SHARED_SECRET=short-but-secret"}, "cluster.auth.shared_secret is 16 bytes"},
		{"previous equals secret", []string{"IGGY_CLUSTER_AUTH_ENABLED=true", "IGGY_CLUSTER_AUTH_SHARED_SECRET=" + secret,
			"IGGY_CLUSTER_AUTH_PREVIOUS_SHARED_SECRET=" + secret}, "must differ"},
		{"short previous", []string{"IGGY_CLUSTER_AUTH_ENABLED=true", "IGGY_CLUSTER_AUTH_SHARED_SECRET=" + secret,
			"IGGY_CLUSTER_AUTH_PREVIOUS_SHARED_SECRET=short-old-secret"}, "previous_shared_secret is 16 bytes"},
		{"tls without auth", []string{"IGGY_CLUSTER_TLS_ENABLED=true", "IGGY_CLUSTER_TLS_SELF_SIGNED=true"}, "requires cluster.auth.enabled"},
		{"tls without files", []string{"IGGY_CLUSTER_AUTH_ENABLED=true", "IGGY_CLUSTER_AUTH_SHARED_SECRET=" + secret,
			"IGGY_CLUSTER_TLS_ENABLED=true", "IGGY_CLUSTER_TLS_CERT_FILE=node.pem", "IGGY_CLUSTER_TLS_KEY_FILE=node.key"}, "ca_file"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := Load("", tc.env)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Load: %v, want a refusal naming %q", err, tc.want)
			}
			for _, kv := range tc.env {
				if _, v, _ := strings.Cut(kv, "="); strings.Contains(kv, "SECRET") || strings.Contains(kv, "ENCRYPTION_KEY") {
					if strings.Contains(err.Error(), v) {
						t.Fatalf("the refusal shows a secret: %v", err)
					}
				}
			}
		})
	}
	// 11.2.1: the key from IGGY_SYSTEM_ENCRYPTION_KEY loads and decodes.
	c, _, err := Load("", []string{"IGGY_SYSTEM_ENCRYPTION_ENABLED=true", "IGGY_SYSTEM_ENCRYPTION_KEY=" + key32})
	if err != nil {
		t.Fatalf("a valid key must load: %v", err)
	}
	if key, err := c.System.Encryption.KeyBytes(); err != nil || len(key) != 32 || !c.System.Encryption.Enabled {
		t.Fatalf("key of %d bytes, %v", len(key), err)
	}
}

// The same rules hold for a file, all violations are reported at once,
// and what the rules allow loads.
func TestLoadReportsEveryViolationAndAcceptsTheBoundaries(t *testing.T) {
	p := writeFile(t, `
[system.segment]
archive_expired = true
[system.recovery]
recreate_missing_state = true
`)
	_, _, err := Load(p, nil)
	if err == nil || !strings.Contains(err.Error(), "archive_expired") || !strings.Contains(err.Error(), "recreate_missing_state") {
		t.Fatalf("want both placeholders refused, got %v", err)
	}
	ok := []string{
		"IGGY_SYSTEM_SEGMENT_ARCHIVE_EXPIRED=false",
		"IGGY_SYSTEM_ENCRYPTION_ENABLED=false", "IGGY_SYSTEM_ENCRYPTION_KEY=whatever",
		"IGGY_CLUSTER_HEARTBEAT_TIMEOUT=2s",
		"IGGY_METADATA_PREPARE_QUEUE_DEPTH=127", "IGGY_METADATA_JOURNAL_SLOTS=508",
		"IGGY_MESSAGE_BUS_MAX_BATCH=512", "IGGY_CLUSTER_SUPERBLOCK_WEDGED_FATAL_TIMEOUT=0s",
		"IGGY_CLUSTER_AUTH_ENABLED=true", "IGGY_CLUSTER_AUTH_SHARED_SECRET=0123456789abcdef0123456789abcdef",
		"IGGY_CLUSTER_TLS_ENABLED=true", "IGGY_CLUSTER_TLS_SELF_SIGNED=true",
		"IGGY_CLUSTER_ALLOW_INSECURE=true", "IGGY_SYSTEM_STRICT_CONFIG=true",
	}
	c, warns, err := Load("", ok)
	if err != nil || len(warns) != 0 {
		t.Fatalf("boundary values refused: %v %v", err, warns)
	}
	if !c.Cluster.TLS.SelfSigned || !c.Cluster.AllowInsecure || !c.System.StrictConfig {
		t.Fatalf("keys not decoded: %+v %+v", c.Cluster.TLS, c.System)
	}
}

// The runtime copy must not carry a secret (11.2.5).
func TestWithoutSecretsBlanksEverySecret(t *testing.T) {
	c := Default()
	c.System.Encryption.Key = "k"
	c.Cluster.Auth.SharedSecret, c.Cluster.Auth.PreviousSharedSecret = "s", "p"
	c.HTTP.Metrics.Token = "t"
	w := c.WithoutSecrets()
	if w.System.Encryption.Key != "" || w.Cluster.Auth.SharedSecret != "" || w.Cluster.Auth.PreviousSharedSecret != "" || w.HTTP.Metrics.Token != "" {
		t.Fatalf("secrets left: %+v %+v %+v", w.System.Encryption, w.Cluster.Auth, w.HTTP.Metrics)
	}
	if c.Cluster.Auth.SharedSecret != "s" {
		t.Fatal("WithoutSecrets changed its receiver")
	}
}

// http.md 1.2: list variables are "[a, b]" or "a, b", trimmed; the
// expiry's sentinels; one configured secret serves both directions.
func TestHTTPListsExpiryAndSecrets(t *testing.T) {
	c, _, err := Load("", []string{"IGGY_HTTP_CORS_ALLOWED_ORIGINS=[http://a.example, http://b.example ]",
		"IGGY_HTTP_CORS_ALLOWED_HEADERS=x-one,x-two", "IGGY_HTTP_JWT_DECODING_SECRET=only-one"})
	if err != nil {
		t.Fatal(err)
	}
	if o := c.HTTP.CORS.AllowedOrigins; len(o) != 2 || o[0] != "http://a.example" || o[1] != "http://b.example" {
		t.Errorf("origins %q", o)
	}
	if h := c.HTTP.CORS.AllowedHeaders; len(h) != 2 || h[1] != "x-two" {
		t.Errorf("headers %q", h)
	}
	sign, verify, err := c.HTTP.JWT.Secrets()
	if err != nil || string(sign) != "only-one" || string(verify) != "only-one" {
		t.Errorf("secrets %q %q %v", sign, verify, err)
	}
	for in, want := range map[string]uint64{"1 h": 3600, "90 s": 90, "none": JWTNeverExpires, "never_expire": JWTNeverExpires, "server_default": 3600} {
		if got, err := (HTTPJWT{AccessTokenExpiry: in}).AccessTokenLifetimeSeconds(); err != nil || got != want {
			t.Errorf("%q: %d %v, want %d", in, got, err, want)
		}
	}
	if c.WithoutSecrets().HTTP.JWT.DecodingSecret != "" {
		t.Error("the runtime copy keeps the JWT secret")
	}
}
