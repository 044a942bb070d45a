//go:build unix

package main

import "syscall"

// restrictFileModes makes everything the process creates owner-only
// (umask 077). The node's own code asks for 0600 and 0700 already; badger
// and ristretto create their files 0666 with no option to change it, and
// they hold password hashes, tokens and messages.
func restrictFileModes() { syscall.Umask(0o077) }
