package main

import (
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"iggynode/client"
	"iggynode/wire"
)

// The cluster group: the roster of GetClusterMetadata (metadata, m) and
// iggynode's admin commands 9001..9004 (status, add, remove, replace;
// docs/reconfiguration.md, "Admin surface").
func (a *app) clusterCommand() *cobra.Command {
	return noun("cluster", "Inspect and change the cluster",
		a.clusterStatusCommand(), a.clusterAddCommand(), a.clusterRemoveCommand(), a.clusterReplaceCommand(),
		a.clusterMetadataCommand())
}

// clusterMetadataCommand is upstream's `iggy cluster metadata`: the
// roster as clients see it (code 12), with iggynode's last-heard times.
func (a *app) clusterMetadataCommand() *cobra.Command {
	return alias(a.clientVerb("metadata", "Show the client roster (GetClusterMetadata): addresses, roles, health and when the answering node last heard each node", 0, 0,
		func(c *client.Client, _ []wire.Identifier, _ []string) error {
			m, err := c.GetClusterMetadata(a.ctx)
			if err != nil {
				return err
			}
			now := time.Now()
			return a.print(m, func(t *table) {
				t.row("Cluster", m.Name)
				t.row("NODE", "IP", "TCP", "QUIC", "HTTP", "WS", "ROLE", "STATUS", "LAST HEARD")
				for i, n := range m.Nodes {
					heard := "-"
					if i < len(m.LastHeardUs) {
						heard = lastHeardText(m.LastHeardUs[i], now)
					}
					t.row(n.Name, n.IP, n.TCPPort, n.QUICPort, n.HTTPPort, n.WebSocketPort, n.Role, n.Status, heard)
				}
			})
		}), "m")
}

// lastHeardText renders a last-heard time as its age and clock time; 0
// (never heard, or a server without the extension) is "-".
func lastHeardText(us uint64, now time.Time) string {
	if us == 0 {
		return "-"
	}
	at := time.UnixMicro(int64(us))
	age := max(now.Sub(at), 0).Round(100 * time.Millisecond)
	return fmt.Sprintf("%s ago (%s)", age, at.UTC().Format("15:04:05.000"))
}

func (a *app) clusterStatusCommand() *cobra.Command {
	cmd := a.listing(a.clientVerb("status", "Show the metadata roster (ClusterStatus, 9004): epoch, voters, learners, a change in progress, each member's role, liveness and commit, and where partitions live and who leads them", 0, 0,
		func(c *client.Client, _ []wire.Identifier, _ []string) error {
			a.errHint = clusterHint(wire.CodeClusterStatus)
			r, err := c.ClusterStatus(a.ctx)
			if err != nil {
				return err
			}
			return a.printClusterStatus(r, "")
		}))
	cmd.Flags().BoolVar(&a.statusPartitions, "partitions", false, "also list every partition: its replica set, the group's voters, preferred and current primary, and whether it is moving")
	return cmd
}

// specFlags are the NodeSpec fields add and replace take as flags.
type specFlags struct {
	name, ip                   string
	tcp, quic, http, webSocket uint16
}

func (f *specFlags) bind(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.StringVar(&f.name, "name", "", "node name clients see in the roster (default: the node uses iggy-node-ID)")
	fl.StringVar(&f.ip, "ip", "", "host or IP clients dial (default: the node uses the host of REPLICA_ADDRESS)")
	fl.Uint16Var(&f.tcp, "tcp-port", 0, "client TCP port (0: not offered)")
	fl.Uint16Var(&f.quic, "quic-port", 0, "client QUIC port (0: not offered)")
	fl.Uint16Var(&f.http, "http-port", 0, "HTTP API port (0: not offered)")
	fl.Uint16Var(&f.webSocket, "websocket-port", 0, "client WebSocket port (0: not offered)")
}

// spec parses the ID and REPLICA_ADDRESS arguments and joins the flags.
func (f *specFlags) spec(id, replicaAddress string) (wire.NodeSpec, error) {
	n, err := parseNodeID(id)
	if err != nil {
		return wire.NodeSpec{}, err
	}
	if err := checkReplicaAddress(replicaAddress); err != nil {
		return wire.NodeSpec{}, err
	}
	s := wire.NodeSpec{ID: n, ReplicaAddress: replicaAddress, Name: f.name, IP: f.ip,
		TCPPort: f.tcp, QUICPort: f.quic, HTTPPort: f.http, WebSocketPort: f.webSocket}
	return s, s.Validate()
}

func parseNodeID(s string) (uint8, error) {
	n, err := strconv.ParseUint(s, 10, 8)
	if err != nil || n > wire.MaxNodeID {
		return 0, fmt.Errorf("node id %q: a number in 0..=%d", s, wire.MaxNodeID)
	}
	return uint8(n), nil
}

// checkReplicaAddress refuses what the node would: not host:port with a
// port 1..65535, or longer than a Str8.
func checkReplicaAddress(s string) error {
	host, port, err := net.SplitHostPort(s)
	if err == nil {
		if p, perr := strconv.ParseUint(port, 10, 16); perr != nil || p == 0 || host == "" {
			err = errors.New("needs a host and a port 1..65535")
		}
	}
	if err == nil && len(s) > 255 {
		err = errors.New("longer than 255 bytes")
	}
	if err != nil {
		return fmt.Errorf("replica address %q is not HOST:PORT of the node's replica plane: %w", s, err)
	}
	return nil
}

func (a *app) clusterAddCommand() *cobra.Command {
	var f specFlags
	cmd := a.verb("add ID REPLICA_ADDRESS", "Add a node (ClusterAdd, 9001): it joins as a learner and becomes a voter once it holds the log", 2, 0,
		func(_ []wire.Identifier, args []string) error {
			spec, err := f.spec(args[0], args[1])
			if err != nil {
				return err
			}
			c, err := a.connect()
			if err != nil {
				return err
			}
			a.errHint = clusterHint(wire.CodeClusterAdd)
			r, err := c.ClusterAdd(a.ctx, spec)
			if err != nil {
				return err
			}
			return a.printClusterStatus(r, fmt.Sprintf("Node %d joins as a learner; it becomes a voter once it holds the log.", spec.ID))
		})
	f.bind(cmd)
	return cmd
}

func (a *app) clusterRemoveCommand() *cobra.Command {
	return a.verb("remove ID", "Remove a node (ClusterRemove, 9002); removing the primary moves the primary first", 1, 0,
		func(_ []wire.Identifier, args []string) error {
			id, err := parseNodeID(args[0])
			if err != nil {
				return err
			}
			c, err := a.connect()
			if err != nil {
				return err
			}
			a.errHint = clusterHint(wire.CodeClusterRemove)
			r, err := c.ClusterRemove(a.ctx, id)
			if err != nil {
				return err
			}
			return a.printClusterStatus(r, fmt.Sprintf("Removal of node %d started.", id))
		})
}

func (a *app) clusterReplaceCommand() *cobra.Command {
	var f specFlags
	cmd := a.verb("replace OLD_ID NEW_ID REPLICA_ADDRESS",
		"Replace a voter (ClusterReplace, 9003); NEW_ID = OLD_ID moves that node to a new address", 3, 0,
		func(_ []wire.Identifier, args []string) error {
			old, err := parseNodeID(args[0])
			if err != nil {
				return err
			}
			spec, err := f.spec(args[1], args[2])
			if err != nil {
				return err
			}
			c, err := a.connect()
			if err != nil {
				return err
			}
			a.errHint = clusterHint(wire.CodeClusterReplace)
			r, err := c.ClusterReplace(a.ctx, old, spec)
			if err != nil {
				return err
			}
			note := fmt.Sprintf("Node %d joins as a learner and takes node %d's place among the voters once it holds the log.", spec.ID, old)
			if spec.ID == old {
				note = fmt.Sprintf("Node %d moves to %s; it starts empty and transfers the state.", old, spec.ReplicaAddress)
			}
			return a.printClusterStatus(r, note)
		})
	f.bind(cmd)
	return cmd
}

// clusterHint is the advice for a failed cluster command of this code.
func clusterHint(code wire.CommandCode) func(error) string {
	return func(err error) string {
		ec, ok := wire.CodeOf(err)
		if !ok {
			return ""
		}
		switch {
		case ec == wire.ErrReconfigurationInProgress:
			return "another cluster change is in progress: `iggy cluster status` shows its target; retry once it is reached"
		case ec == wire.ErrNodeRemoved:
			return "this node has left the cluster: connect to a node of the current roster (`iggy cluster metadata`)"
		case ec == wire.ErrUnauthorized && code == wire.CodeClusterStatus:
			return "cluster status needs the read_servers (or manage_servers) permission"
		case ec == wire.ErrUnauthorized:
			return "cluster changes need the manage_servers permission"
		case ec == wire.ErrFeatureUnavailable:
			return "the cluster admin commands are not available over this transport or server: use tcp, quic or ws against iggynode"
		case ec == wire.ErrInvalidCommand && code == wire.CodeClusterStatus:
			return "the server does not know ClusterStatus (9004): `iggy cluster metadata` shows the roster"
		case ec == wire.ErrInvalidCommand:
			return "the roster refused the change (add: the id is already a member; remove: not a member, or the last voter; " +
				"replace: the old id is not a voter), or the server does not know the cluster admin commands"
		}
		return ""
	}
}

// clusterStatusJSON is the --output json form of a ClusterStatusReply:
// the reply's fields in snake_case, id bitmasks as id lists.
type clusterStatusJSON struct {
	Epoch    uint32            `json:"epoch"`
	Voters   []int             `json:"voters"`
	Learners []int             `json:"learners"`
	Target   []int             `json:"target"`
	EpochOp  uint64            `json:"epoch_op"`
	View     uint32            `json:"view"`
	Nodes    []clusterNodeJSON `json:"nodes"`
	// Partitions is the placement (issue 23), [] on a cluster that places
	// none.
	Partitions []clusterPartitionJSON `json:"partitions"`
}

type clusterPartitionJSON struct {
	StreamID    uint32 `json:"stream_id"`
	TopicID     uint32 `json:"topic_id"`
	PartitionID uint32 `json:"partition_id"`
	Replicas    []int  `json:"replicas"`
	Voters      []int  `json:"voters"`
	Preferred   uint8  `json:"preferred_primary"`
	Primary     *uint8 `json:"primary"` // null: not known here
	Moving      bool   `json:"moving"`
}

type clusterNodeJSON struct {
	ID             uint8  `json:"id"`
	Role           string `json:"role"`
	Primary        bool   `json:"primary"`
	Status         string `json:"status"`
	Commit         uint64 `json:"commit"`
	Replicas       int    `json:"partition_replicas"`
	Leads          int    `json:"partitions_led"`
	ReplicaAddress string `json:"replica_address"`
	Name           string `json:"name"`
	IP             string `json:"ip"`
	TCPPort        uint16 `json:"tcp_port"`
	QUICPort       uint16 `json:"quic_port"`
	HTTPPort       uint16 `json:"http_port"`
	WebSocketPort  uint16 `json:"websocket_port"`
}

func clusterStatusView(r wire.ClusterStatusReply) clusterStatusJSON {
	v := clusterStatusJSON{Epoch: r.Epoch, Voters: maskIDs(r.Voters), Learners: maskIDs(r.Learners), Target: maskIDs(r.Target),
		EpochOp: r.EpochOp, View: r.View, Nodes: make([]clusterNodeJSON, 0, len(r.Nodes)), Partitions: []clusterPartitionJSON{}}
	replicas, leads := placementCounts(r)
	for _, n := range r.Nodes {
		s := n.Spec
		v.Nodes = append(v.Nodes, clusterNodeJSON{ID: s.ID, Role: n.Role.String(), Primary: n.Primary, Status: n.Status.String(),
			Commit: n.Commit, Replicas: replicas[s.ID], Leads: leads[s.ID], ReplicaAddress: s.ReplicaAddress, Name: s.Name, IP: s.IP,
			TCPPort: s.TCPPort, QUICPort: s.QUICPort, HTTPPort: s.HTTPPort, WebSocketPort: s.WebSocketPort})
	}
	for _, p := range r.Partitions {
		e := clusterPartitionJSON{StreamID: p.Stream, TopicID: p.Topic, PartitionID: p.Partition, Replicas: maskIDs(p.Replicas),
			Voters: maskIDs(p.Voters), Preferred: p.Preferred, Moving: p.Moving()}
		if p.Primary != wire.NoPrimary {
			primary := p.Primary
			e.Primary = &primary
		}
		v.Partitions = append(v.Partitions, e)
	}
	return v
}

// placementCounts are the partition replicas each node holds and the
// partitions it leads (as far as the answering node knows).
func placementCounts(r wire.ClusterStatusReply) (replicas, leads [wire.MaxNodeID + 1]int) {
	for _, p := range r.Partitions {
		for id := range replicas {
			if p.Replicas&(1<<id) != 0 {
				replicas[id]++
			}
		}
		if p.Primary != wire.NoPrimary {
			leads[p.Primary]++
		}
	}
	return replicas, leads
}

// maskIDs lists the ids of a roster bitmask in ascending order; never nil,
// so JSON shows [] for none.
func maskIDs(mask uint32) []int {
	ids := []int{}
	for id := 0; id <= wire.MaxNodeID; id++ {
		if mask&(1<<id) != 0 {
			ids = append(ids, id)
		}
	}
	return ids
}

func idsText(mask uint32) string {
	ids := maskIDs(mask)
	if len(ids) == 0 {
		return "-"
	}
	parts := make([]string, len(ids))
	for i, id := range ids {
		parts[i] = strconv.Itoa(id)
	}
	return strings.Join(parts, ",")
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func portText(p uint16) string {
	if p == 0 {
		return "-"
	}
	return strconv.Itoa(int(p))
}

// printClusterStatus prints a ClusterStatusReply: as clusterStatusJSON
// with --output json; else note (if any), the roster line and the node
// table, each table honouring --list-mode.
func (a *app) printClusterStatus(r wire.ClusterStatusReply, note string) error {
	if a.output == "json" {
		return a.print(clusterStatusView(r), nil)
	}
	if note != "" {
		fmt.Fprintln(a.out, note)
		fmt.Fprintln(a.out)
	}
	change := "none"
	if r.Target != r.Voters {
		change = "in progress"
	}
	if err := a.print(nil, func(t *table) {
		t.row("EPOCH", "VIEW", "EPOCH OP", "VOTERS", "LEARNERS", "TARGET", "CHANGE")
		t.row(r.Epoch, r.View, r.EpochOp, idsText(r.Voters), idsText(r.Learners), idsText(r.Target), change)
	}); err != nil {
		return err
	}
	fmt.Fprintln(a.out)
	replicas, leads := placementCounts(r)
	placed := len(r.Partitions) > 0
	if err := a.print(nil, func(t *table) {
		head := []any{"ID", "ROLE", "PRIMARY", "STATUS", "COMMIT"}
		if placed {
			head = append(head, "REPLICAS", "LEADS")
		}
		t.row(append(head, "REPLICA ADDRESS", "NAME", "IP", "TCP", "QUIC", "HTTP", "WS")...)
		for _, n := range r.Nodes {
			s := n.Spec
			primary := "no"
			if n.Primary {
				primary = "yes"
			}
			row := []any{s.ID, n.Role, primary, n.Status, n.Commit}
			if placed {
				row = append(row, replicas[s.ID], leads[s.ID])
			}
			t.row(append(row, s.ReplicaAddress, orDash(s.Name), orDash(s.IP),
				portText(s.TCPPort), portText(s.QUICPort), portText(s.HTTPPort), portText(s.WebSocketPort))...)
		}
	}); err != nil || !placed || !a.statusPartitions {
		return err
	}
	fmt.Fprintln(a.out)
	return a.print(nil, func(t *table) {
		t.row("STREAM", "TOPIC", "PARTITION", "REPLICAS", "VOTERS", "PREFERRED", "PRIMARY", "MOVING")
		for _, p := range r.Partitions {
			primary, moving := "-", "no"
			if p.Primary != wire.NoPrimary {
				primary = strconv.Itoa(int(p.Primary))
			}
			if p.Moving() {
				moving = "yes"
			}
			t.row(p.Stream, p.Topic, p.Partition, idsText(p.Replicas), idsText(p.Voters), p.Preferred, primary, moving)
		}
	})
}
