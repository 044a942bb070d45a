//go:build !unix

package main

// restrictFileModes: no umask outside unix; the node's own files still ask
// for owner-only modes.
func restrictFileModes() {}
