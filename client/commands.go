package client

import (
	"context"
	"errors"
	"fmt"
	"math"

	"iggynode/wire"
)

// NeverExpire is the PAT expiry that never expires (u64::MAX, 8.3.2); 0,
// the server default, also never expires today.
const NeverExpire uint64 = math.MaxUint64

// run validates and sends req under its own code. Lock held.
func (c *Client) run(ctx context.Context, req request) (reply, error) {
	if err := validate(req); err != nil {
		return reply{}, err
	}
	code := req.Code()
	return c.exchange(ctx, call{code: code, op: code.Operation(), buf: c.frame(&c.wbuf, req), retry: true})
}

// invoke sends req and decodes the reply payload into out (nil ignores it).
// An empty payload is decoded too (lists read it as empty).
func (c *Client) invoke(ctx context.Context, req request, out wire.Body) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	rep, err := c.run(ctx, req)
	if err != nil || out == nil {
		return err
	}
	return decodeReply(req.Code(), out, rep.body)
}

// lookup is invoke for the reads that answer "not found" with an empty
// status-0 body (client-plane.md 19 #10): it reports notFound instead.
func (c *Client) lookup(ctx context.Context, req request, out wire.Body, notFound error) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	rep, err := c.run(ctx, req)
	if err != nil {
		return err
	}
	if len(rep.body) == 0 {
		return notFound
	}
	return decodeReply(req.Code(), out, rep.body)
}

// bodyPtr is a pointer to a decodable reply type.
type bodyPtr[T any] interface {
	*T
	wire.Body
}

// fetch sends req and decodes the reply payload into a new T.
func fetch[T any, P bodyPtr[T]](ctx context.Context, c *Client, req request) (*T, error) {
	out := new(T)
	if err := c.invoke(ctx, req, P(out)); err != nil {
		return nil, err
	}
	return out, nil
}

// fetchList is fetch for list replies, returned by value.
func fetchList[T any, P bodyPtr[T]](ctx context.Context, c *Client, req request) (T, error) {
	var out T
	if err := c.invoke(ctx, req, P(&out)); err != nil {
		var zero T
		return zero, err
	}
	return out, nil
}

// find is fetch for the reads that answer "not found" with an empty body.
func find[T any, P bodyPtr[T]](ctx context.Context, c *Client, req request, notFound error) (*T, error) {
	out := new(T)
	if err := c.lookup(ctx, req, P(out), notFound); err != nil {
		return nil, err
	}
	return out, nil
}

func decodeReply(code wire.CommandCode, out wire.Body, body []byte) error {
	if err := out.Decode(body); err != nil {
		return fmt.Errorf("client: %v reply: %w", code, err)
	}
	return nil
}

// System (client-plane.md 8.1).

// GetStats reads the server statistics (code 10).
func (c *Client) GetStats(ctx context.Context) (*wire.Stats, error) {
	return fetch[wire.Stats](ctx, c, wire.GetStats{})
}

// GetSnapshot returns the diagnostic ZIP archive (code 11).
func (c *Client) GetSnapshot(ctx context.Context, compression uint8, types []uint8) ([]byte, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	rep, err := c.run(ctx, wire.GetSnapshot{Compression: compression, Types: types})
	if err != nil {
		return nil, err
	}
	return append([]byte(nil), rep.body...), nil
}

// GetClusterMetadata reads the cluster roster (code 12), asking for
// iggynode's last-heard extension (LastHeardUs; nil from a server without
// it, which ignores the request's extension byte).
func (c *Client) GetClusterMetadata(ctx context.Context) (*wire.ClusterMetadata, error) {
	return fetch[wire.ClusterMetadata](ctx, c, wire.GetClusterMetadata{LastHeard: true})
}

// DescribeOptions reads the option catalogue of a scope: 1 topic, 2
// stream, 3 user (code 13).
func (c *Client) DescribeOptions(ctx context.Context, scope uint8) (wire.OptionCatalog, error) {
	return fetchList[wire.OptionCatalog](ctx, c, wire.DescribeOptions{Scope: scope})
}

// GetMe describes this connection (code 20).
func (c *Client) GetMe(ctx context.Context) (*wire.ClientDetails, error) {
	return fetch[wire.ClientDetails](ctx, c, wire.GetMe{})
}

// GetClient describes a connection by its number (code 21);
// wire.ErrClientNotFound when there is none.
func (c *Client) GetClient(ctx context.Context, clientID uint32) (*wire.ClientDetails, error) {
	return find[wire.ClientDetails](ctx, c, wire.GetClient{ClientID: clientID}, wire.ErrClientNotFound)
}

// GetClients lists the connections (code 22).
func (c *Client) GetClients(ctx context.Context) (wire.Clients, error) {
	return fetchList[wire.Clients](ctx, c, wire.GetClients{})
}

// Users (8.2).

// GetUser reads a user (code 31); wire.ErrResourceNotFound when there is none.
func (c *Client) GetUser(ctx context.Context, user wire.Identifier) (*wire.UserDetails, error) {
	return find[wire.UserDetails](ctx, c, wire.GetUser{User: user}, wire.ErrResourceNotFound)
}

// GetUsers lists the users (code 32).
func (c *Client) GetUsers(ctx context.Context) (wire.Users, error) {
	return fetchList[wire.Users](ctx, c, wire.GetUsers{})
}

// CreateUser creates a user (code 33); perms nil means no permission set.
// Username (3..=50) and password (3..=100) lengths are checked locally, as
// the SDKs do (11.4).
func (c *Client) CreateUser(ctx context.Context, username, password string, status wire.UserStatus, perms *wire.Permissions) (*wire.UserDetails, error) {
	if err := checkUsername(username); err != nil {
		return nil, err
	}
	if err := checkPassword(password); err != nil {
		return nil, err
	}
	return fetch[wire.UserDetails](ctx, c, wire.CreateUser{Username: username, Password: password, Status: uint8(status), Permissions: perms})
}

// DeleteUser deletes a user (code 34).
func (c *Client) DeleteUser(ctx context.Context, user wire.Identifier) error {
	return c.invoke(ctx, wire.DeleteUser{User: user}, nil)
}

// UpdateUser renames a user and/or changes its status (code 35); nil
// leaves a field unchanged.
func (c *Client) UpdateUser(ctx context.Context, user wire.Identifier, username *string, status *wire.UserStatus) error {
	req := wire.UpdateUser{User: user, Username: username}
	if status != nil {
		s := uint8(*status)
		req.Status = &s
	}
	return c.invoke(ctx, req, nil)
}

// UpdatePermissions replaces a user's permission set (code 36); nil
// removes it.
func (c *Client) UpdatePermissions(ctx context.Context, user wire.Identifier, perms *wire.Permissions) error {
	return c.invoke(ctx, wire.UpdatePermissions{User: user, Permissions: perms}, nil)
}

// ChangePassword changes a user's password (code 37); the new password's
// length (3..=100) is checked locally, as the SDKs do (8.2.7).
func (c *Client) ChangePassword(ctx context.Context, user wire.Identifier, current, next string) error {
	if err := checkPassword(next); err != nil {
		return err
	}
	return c.invoke(ctx, wire.ChangePassword{User: user, CurrentPassword: current, NewPassword: next}, nil)
}

func checkUsername(s string) error {
	if len(s) < 3 || len(s) > 50 {
		return fmt.Errorf("client: username of %d bytes: %w", len(s), wire.ErrInvalidUsername)
	}
	return nil
}

func checkPassword(s string) error {
	if len(s) < 3 || len(s) > 100 {
		return fmt.Errorf("client: password of %d bytes: %w", len(s), wire.ErrInvalidPassword)
	}
	return nil
}

// Personal access tokens (8.3).

// GetPersonalAccessTokens lists the caller's tokens (code 41); an empty
// body is an empty list.
func (c *Client) GetPersonalAccessTokens(ctx context.Context) (wire.PersonalAccessTokens, error) {
	return fetchList[wire.PersonalAccessTokens](ctx, c, wire.GetPersonalAccessTokens{})
}

// CreatePersonalAccessToken mints a token and returns it raw, once (code
// 42). expiry is a duration in µs: 0 is the server default (never),
// NeverExpire never expires.
func (c *Client) CreatePersonalAccessToken(ctx context.Context, name string, expiry uint64) (string, error) {
	out, err := fetch[wire.RawToken](ctx, c, wire.CreatePersonalAccessToken{Name: name, Expiry: expiry})
	if err != nil {
		return "", err
	}
	return out.Token, nil
}

// DeletePersonalAccessToken deletes one of the caller's tokens (code 43).
func (c *Client) DeletePersonalAccessToken(ctx context.Context, name string) error {
	return c.invoke(ctx, wire.DeletePersonalAccessToken{Name: name}, nil)
}

// Streams (8.6).

// GetStream reads a stream with its topics (code 200);
// wire.ErrStreamIdNotFound when there is none.
func (c *Client) GetStream(ctx context.Context, stream wire.Identifier) (*wire.StreamDetails, error) {
	return find[wire.StreamDetails](ctx, c, wire.GetStream{Stream: stream}, wire.ErrStreamIdNotFound)
}

// GetStreams lists the streams (code 201).
func (c *Client) GetStreams(ctx context.Context) (wire.Streams, error) {
	return fetchList[wire.Streams](ctx, c, wire.GetStreams{})
}

// CreateStream creates a stream (code 202); opts may be nil.
func (c *Client) CreateStream(ctx context.Context, name string, opts wire.Options) (*wire.StreamDetails, error) {
	return fetch[wire.StreamDetails](ctx, c, wire.CreateStream{Name: name, Options: opts})
}

// UpdateStream renames a stream and patches its options (code 204).
func (c *Client) UpdateStream(ctx context.Context, stream wire.Identifier, name string, opts wire.Options) error {
	return c.invoke(ctx, wire.UpdateStream{Stream: stream, Name: name, Options: opts}, nil)
}

// DeleteStream deletes a stream (code 203).
func (c *Client) DeleteStream(ctx context.Context, stream wire.Identifier) error {
	defer c.forgetPartitions()
	return c.invoke(ctx, wire.DeleteStream{Stream: stream}, nil)
}

// PurgeStream empties every partition of a stream (code 205).
func (c *Client) PurgeStream(ctx context.Context, stream wire.Identifier) error {
	return c.invoke(ctx, wire.PurgeStream{Stream: stream}, nil)
}

// Topics (8.7).

// GetTopic reads a topic with its partitions (code 300);
// wire.ErrTopicIdNotFound when there is none. It refreshes the partition
// count cached for client-side routing.
func (c *Client) GetTopic(ctx context.Context, stream, topic wire.Identifier) (*wire.TopicDetails, error) {
	out := new(wire.TopicDetails)
	if err := c.lookup(ctx, wire.GetTopic{Stream: stream, Topic: topic}, out, wire.ErrTopicIdNotFound); err != nil {
		return nil, err
	}
	c.mu.Lock()
	c.partitions[topicKey{stream, topic}] = out.PartitionsCount
	c.mu.Unlock()
	return out, nil
}

// GetTopics lists a stream's topics (code 301).
func (c *Client) GetTopics(ctx context.Context, stream wire.Identifier) (wire.Topics, error) {
	return fetchList[wire.Topics](ctx, c, wire.GetTopics{Stream: stream})
}

// CreateTopic creates a topic with partitions 0..partitions-1 (code 302);
// every setting rides opts (client-plane.md 10.4).
func (c *Client) CreateTopic(ctx context.Context, stream wire.Identifier, name string, partitions uint32, opts wire.Options) (*wire.TopicDetails, error) {
	defer c.forgetPartitions()
	return fetch[wire.TopicDetails](ctx, c, wire.CreateTopic{Stream: stream, PartitionsCount: partitions, Name: name, Options: opts})
}

// UpdateTopic renames a topic and patches compression_algorithm,
// message_expiry and max_topic_size (code 304).
func (c *Client) UpdateTopic(ctx context.Context, stream, topic wire.Identifier, name string, opts wire.Options) error {
	return c.invoke(ctx, wire.UpdateTopic{Stream: stream, Topic: topic, Name: name, Options: opts}, nil)
}

// DeleteTopic deletes a topic (code 303).
func (c *Client) DeleteTopic(ctx context.Context, stream, topic wire.Identifier) error {
	defer c.forgetPartitions()
	return c.invoke(ctx, wire.DeleteTopic{Stream: stream, Topic: topic}, nil)
}

// PurgeTopic empties every partition of a topic (code 305).
func (c *Client) PurgeTopic(ctx context.Context, stream, topic wire.Identifier) error {
	return c.invoke(ctx, wire.PurgeTopic{Stream: stream, Topic: topic}, nil)
}

// Partitions and segments (8.8, 8.9).

// CreatePartitions appends count partitions to a topic (code 402).
func (c *Client) CreatePartitions(ctx context.Context, stream, topic wire.Identifier, count uint32) error {
	defer c.forgetPartitions()
	return c.invoke(ctx, wire.CreatePartitions{Stream: stream, Topic: topic, PartitionsCount: count}, nil)
}

// DeletePartitions removes the count highest partitions of a topic (code 403).
func (c *Client) DeletePartitions(ctx context.Context, stream, topic wire.Identifier, count uint32) error {
	defer c.forgetPartitions()
	return c.invoke(ctx, wire.DeletePartitions{Stream: stream, Topic: topic, PartitionsCount: count}, nil)
}

// DeleteSegments deletes the count oldest sealed segments of a partition
// (code 503).
func (c *Client) DeleteSegments(ctx context.Context, stream, topic wire.Identifier, partition, count uint32) error {
	return c.invoke(ctx, wire.DeleteSegments{Stream: stream, Topic: topic, PartitionID: partition, SegmentsCount: count}, nil)
}

// Consumer offsets (8.5).

// GetConsumerOffset reads a stored offset (code 120); nil, nil when none is
// stored. An absent partition reads partition 0.
func (c *Client) GetConsumerOffset(ctx context.Context, consumer wire.Consumer, stream, topic wire.Identifier, partition wire.OptionalPartition) (*wire.ConsumerOffset, error) {
	out, err := find[wire.ConsumerOffset](ctx, c, wire.GetConsumerOffset{Consumer: consumer, Stream: stream, Topic: topic, Partition: partition}, errNoOffset)
	if err == errNoOffset {
		return nil, nil
	}
	return out, err
}

var errNoOffset = errors.New("client: no stored offset")

// StoreConsumerOffset stores an offset (code 121) with the given ack level:
// wire.AckQuorum replicates before replying, wire.AckNone writes on the
// partition leader only. The partition must be given (18 #22).
func (c *Client) StoreConsumerOffset(ctx context.Context, consumer wire.Consumer, stream, topic wire.Identifier, partition wire.OptionalPartition, offset uint64, ack wire.AckLevel) error {
	return c.invoke(ctx, wire.StoreConsumerOffset{Consumer: consumer, Stream: stream, Topic: topic, Partition: partition, Offset: offset, Ack: ack}, nil)
}

// DeleteConsumerOffset deletes a stored offset (code 122).
func (c *Client) DeleteConsumerOffset(ctx context.Context, consumer wire.Consumer, stream, topic wire.Identifier, partition wire.OptionalPartition, ack wire.AckLevel) error {
	return c.invoke(ctx, wire.DeleteConsumerOffset{Consumer: consumer, Stream: stream, Topic: topic, Partition: partition, Ack: ack}, nil)
}

// FlushUnsavedBuffer is code 102; the server always answers
// FeatureUnavailable (8.4.3).
func (c *Client) FlushUnsavedBuffer(ctx context.Context, stream, topic wire.Identifier, partition uint32, fsync bool) error {
	return c.invoke(ctx, wire.FlushUnsavedBuffer{Stream: stream, Topic: topic, PartitionID: partition, Fsync: fsync}, nil)
}
