// Package e2e holds the end-to-end tests: real nodes started in-process on
// loopback port 0, driven through the Go SDK (package client) exactly as an
// application would drive them.
package e2e
