package metadata

import "iggynode/wire"

// Rule is a permission rule of server-behaviour.md 2.4 (client-plane.md 9.5).
type Rule uint8

const (
	RuleServerRead Rule = iota + 1
	RuleUsersRead
	RuleUsersManage
	RuleStreamsList
	RuleStreamRead
	RuleStreamCreate
	RuleStreamManage
	RuleTopicsList
	RuleTopicRead
	RuleTopicCreate
	RuleTopicManage
	RulePoll
	RuleSend
	// RuleServerManage is iggynode's cluster admin commands (9001-9003,
	// docs/reconfiguration.md): manage_servers.
	RuleServerManage
)

// Allowed evaluates rule for userID on the addressed stream and topic
// (ignored by rules that are not scoped to them). A rule passes if any
// listed flag is set at the global level, then the stream entry of stream,
// then that entry's topic entry of topic (2.4). Root (user 0) holds every
// grant (2.1.5). A user that does not exist, or has no permission set, is
// denied (2.2.6 Recommended, 2.3.1).
func (s *State) Allowed(userID uint32, rule Rule, stream, topic uint32) bool {
	var p *wire.Permissions
	if u, ok := s.users[userID]; ok {
		p = u.Permissions
	}
	return permitted(userID, p, rule, stream, topic)
}

// permitted is the rule for a user with permissions p (nil: none): root
// may do anything.
func permitted(userID uint32, p *wire.Permissions, rule Rule, stream, topic uint32) bool {
	if userID == RootUserID {
		return true
	}
	return p != nil && allows(p, rule, stream, topic)
}

func allows(p *wire.Permissions, rule Rule, stream, topic uint32) bool {
	g := p.Global
	se, hasStream := p.Streams[stream]
	var te wire.TopicPermissions
	hasTopic := false
	if hasStream {
		te, hasTopic = se.Topics[topic]
	}
	switch rule {
	case RuleServerRead:
		return g.ManageServers || g.ReadServers
	case RuleServerManage:
		return g.ManageServers
	case RuleUsersRead:
		return g.ManageUsers || g.ReadUsers
	case RuleUsersManage:
		return g.ManageUsers
	case RuleStreamsList:
		return g.ManageStreams || g.ReadStreams
	case RuleStreamRead:
		return g.ManageStreams || g.ReadStreams || hasStream && (se.ManageStream || se.ReadStream)
	case RuleStreamCreate:
		return g.ManageStreams
	case RuleStreamManage:
		return g.ManageStreams || hasStream && se.ManageStream
	case RuleTopicsList:
		return g.ManageStreams || g.ReadStreams || g.ManageTopics || g.ReadTopics ||
			hasStream && (se.ManageStream || se.ReadStream || se.ManageTopics || se.ReadTopics)
	case RuleTopicRead:
		return g.ManageStreams || g.ReadStreams || g.ManageTopics || g.ReadTopics ||
			hasStream && (se.ManageStream || se.ReadStream || se.ManageTopics || se.ReadTopics) ||
			hasTopic && (te.ManageTopic || te.ReadTopic)
	case RuleTopicCreate:
		return g.ManageStreams || g.ManageTopics || hasStream && (se.ManageStream || se.ManageTopics)
	case RuleTopicManage:
		return g.ManageStreams || g.ManageTopics || hasStream && (se.ManageStream || se.ManageTopics) ||
			hasTopic && te.ManageTopic
	case RulePoll:
		return g.PollMessages || g.ReadTopics || g.ManageTopics || g.ReadStreams || g.ManageStreams ||
			hasStream && (se.ManageStream || se.ReadStream || se.ManageTopics || se.ReadTopics || se.PollMessages) ||
			hasTopic && (te.ManageTopic || te.ReadTopic || te.PollMessages)
	case RuleSend:
		return g.SendMessages || g.ManageStreams || g.ManageTopics ||
			hasStream && (se.ManageStream || se.ManageTopics || se.SendMessages) ||
			hasTopic && (te.ManageTopic || te.SendMessages)
	}
	return false
}
