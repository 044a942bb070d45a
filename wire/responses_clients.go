package wire

import "fmt"

// TransportKind is the transport byte of a ClientResponse (client-plane.md 7.9).
type TransportKind uint8

const (
	TransportTCP       TransportKind = 1 // also TCP+TLS
	TransportQUIC      TransportKind = 2
	TransportHTTP      TransportKind = 3 // never appears on the binary transports
	TransportWebSocket TransportKind = 4 // also WSS
)

func (t TransportKind) String() string {
	switch t {
	case TransportTCP:
		return "tcp"
	case TransportQUIC:
		return "quic"
	case TransportHTTP:
		return "http"
	case TransportWebSocket:
		return "websocket"
	}
	return fmt.Sprintf("transport(%d)", uint8(t))
}

// UserIDNone is ClientResponse.UserID of a connection that is not logged in.
const UserIDNone uint32 = 0xFFFFFFFF

// ClientResponse is one client connection (7.9).
type ClientResponse struct {
	ClientID  uint32 // the server's connection number (5.1)
	UserID    uint32 // UserIDNone when not logged in
	Transport TransportKind
	Address   string // peer address, ip:port or [ipv6]:port
	// ConsumerGroupsCount is the number of groups the connection's client id
	// is a member of; GetClients sends only this count, not the groups.
	ConsumerGroupsCount uint32
}

func (c ClientResponse) AppendTo(b []byte) []byte {
	b = AppendU32(b, c.ClientID)
	b = AppendU32(b, c.UserID)
	b = AppendU8(b, uint8(c.Transport))
	b = AppendStr32(b, c.Address)
	return AppendU32(b, c.ConsumerGroupsCount)
}

func (c *ClientResponse) Decode(body []byte) error {
	return respDecode(c, body, "client", true, (*ClientResponse).read)
}

func (c *ClientResponse) read(r *Reader) {
	c.ClientID = r.U32("client id")
	c.UserID = r.U32("client user_id")
	c.Transport = TransportKind(r.U8("client transport"))
	c.Address = r.Str32("client address")
	c.ConsumerGroupsCount = r.U32("client consumer_groups_count")
}

// ConsumerGroupInfo names one group a client belongs to (7.10, 12 bytes).
type ConsumerGroupInfo struct {
	StreamID uint32
	TopicID  uint32
	GroupID  uint32
}

func (g ConsumerGroupInfo) AppendTo(b []byte) []byte {
	return AppendU32(AppendU32(AppendU32(b, g.StreamID), g.TopicID), g.GroupID)
}

func (g *ConsumerGroupInfo) Decode(body []byte) error {
	return respDecode(g, body, "consumer group info", true, (*ConsumerGroupInfo).read)
}

func (g *ConsumerGroupInfo) read(r *Reader) {
	g.StreamID = r.U32("group info stream_id")
	g.TopicID = r.U32("group info topic_id")
	g.GroupID = r.U32("group info group_id")
}

// ClientDetails is the reply of GetClient and GetMe (7.10): the client
// followed by exactly consumer_groups_count group infos. AppendTo writes
// len(ConsumerGroups) as consumer_groups_count.
type ClientDetails struct {
	ClientResponse
	ConsumerGroups []ConsumerGroupInfo
}

func (c ClientDetails) AppendTo(b []byte) []byte {
	head := c.ClientResponse
	head.ConsumerGroupsCount = uint32(len(c.ConsumerGroups))
	b = head.AppendTo(b)
	for _, g := range c.ConsumerGroups {
		b = g.AppendTo(b)
	}
	return b
}

func (c *ClientDetails) Decode(body []byte) error {
	return respDecode(c, body, "client details", true, (*ClientDetails).read)
}

func (c *ClientDetails) read(r *Reader) {
	c.ClientResponse.read(r)
	n := r.respFitCount("client consumer_groups_count", c.ConsumerGroupsCount, consumerGroupInfoSize)
	c.ConsumerGroups = respReadN(r, n, (*ConsumerGroupInfo).read)
}

// Clients is GetClients' reply (8.1.8): client responses to the end of the
// body, no count and no group infos; an empty body is no clients.
type Clients []ClientResponse

func (c Clients) AppendTo(b []byte) []byte {
	for _, v := range c {
		b = v.AppendTo(b)
	}
	return b
}

func (c *Clients) Decode(body []byte) error {
	return respDecode(c, body, "clients", true, func(c *Clients, r *Reader) {
		*c = respReadToEnd(r, (*ClientResponse).read)
	})
}
