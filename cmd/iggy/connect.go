package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"iggynode/client"
	"iggynode/internal/units"
	"iggynode/wire"
)

// Default server addresses per transport (transports.md 8.5).
var defaultAddress = map[string]string{
	client.TransportTCP:  "127.0.0.1:8090",
	client.TransportQUIC: "127.0.0.1:8080",
	client.TransportWS:   "127.0.0.1:8092",
	client.TransportHTTP: "127.0.0.1:3000",
}

// session is what `iggy login` stores: the connection settings and a
// personal access token, never the password.
type session struct {
	Transport string `json:"transport"`
	Address   string `json:"address"`
	TLS       bool   `json:"tls,omitempty"`
	TLSDomain string `json:"tls_domain,omitempty"`
	CAFile    string `json:"tls_ca_file,omitempty"`
	Insecure  bool   `json:"insecure,omitempty"`
	Username  string `json:"username"`
	TokenName string `json:"token_name"`
	Token     string `json:"token"`
}

// configDir is $XDG_CONFIG_HOME/iggy (or the OS's user config dir).
func configDir() (string, error) {
	dir := os.Getenv("XDG_CONFIG_HOME")
	if dir == "" {
		var err error
		if dir, err = os.UserConfigDir(); err != nil {
			return "", err
		}
	}
	return filepath.Join(dir, "iggy"), nil
}

// sessionPath is --session-file, else one file per context: session.json
// for the default context, session-NAME.json for the others, so a token
// never travels to another context's server.
func (a *app) sessionPath() (string, error) {
	if a.sessionFile != "" {
		return a.sessionFile, nil
	}
	dir, err := configDir()
	if err != nil {
		return "", err
	}
	name, err := a.contextName()
	if err != nil {
		return "", err
	}
	if name == defaultContext {
		return filepath.Join(dir, "session.json"), nil
	}
	return filepath.Join(dir, "session-"+name+".json"), nil
}

// loadSession returns the stored session, or nil when there is none.
func (a *app) loadSession() (*session, error) {
	path, err := a.sessionPath()
	if err != nil {
		return nil, err
	}
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var s session
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, fmt.Errorf("session file %s: %w", path, err)
	}
	return &s, nil
}

// saveSession writes the file with mode 0600 (its token is a credential).
func (a *app) saveSession(s *session) (string, error) {
	path, err := a.sessionPath()
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return "", err
	}
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return "", err
	}
	tmp := path + ".tmp"
	_ = os.Remove(tmp) // WriteFile keeps the mode of an existing file
	if err := os.WriteFile(tmp, append(b, '\n'), 0o600); err != nil {
		return "", err
	}
	return path, os.Rename(tmp, path)
}

// changed reports whether a global flag was given on the command line
// (for address, under any of its spellings).
func (a *app) changed(name string) bool {
	names := []string{name}
	if name == "address" {
		names = append(names, "tcp-server-address", "quic-server-address", "websocket-server-address")
	}
	for _, n := range names {
		if f := a.root.PersistentFlags().Lookup(n); f != nil && f.Changed {
			return true
		}
	}
	return false
}

// options builds the client options: a connection string wins outright;
// otherwise a stored session supplies whatever the flags do not.
func (a *app) options() (client.Options, error) {
	if a.connString != "" {
		o, err := client.ParseConnectionString(a.connString)
		o.ServerBalanced = true // as below
		return o, err
	}
	sess, err := a.loadSession()
	if err != nil {
		return client.Options{}, err
	}
	ctxt, err := a.activeContext()
	if err != nil {
		return client.Options{}, err
	}
	transport, address := a.transport, a.address
	tlsOn, domain, caFile, insecure := a.tls, a.tlsDomain, a.caFile, a.insecure
	if ctxt != nil {
		// The active context is the user's standing choice: it fills what
		// the flags do not say, and the session (made in this context)
		// below it only where the context is silent.
		ctxt.apply(a, &transport, &address, &tlsOn, &domain, &caFile, &insecure)
	}
	if sess != nil && (ctxt == nil || ctxt.Address == "") {
		if !a.changed("transport") && sess.Transport != "" {
			transport = sess.Transport
		}
		if !a.changed("address") && !a.changed("transport") {
			address = sess.Address
		}
		if !a.changed("tls") {
			tlsOn = sess.TLS
		}
		if !a.changed("tls-domain") {
			domain = sess.TLSDomain
		}
		if !a.changed("tls-ca-file") {
			caFile = sess.CAFile
		}
		if !a.changed("insecure") {
			insecure = sess.Insecure
		}
	}
	if address == "" {
		address = defaultAddress[transport]
	}
	o := client.DefaultOptions(transport)
	o.Address = address
	o.Reconnect.Retries = a.retries
	// Each invocation is a fresh client whose own Balanced cursor would
	// start at 0: let the server's per-topic cursor rotate instead.
	o.ServerBalanced = true
	o.TLS.Enabled = tlsOn
	o.TLS.Domain = domain
	o.TLS.CAFile = caFile
	o.TLS.InsecureSkipVerify = insecure
	if transport == client.TransportQUIC {
		o.QUIC.CAFile = caFile
		o.QUIC.ValidateCertificate = caFile != "" && !insecure
		// The reference CLI does not validate QUIC certificates unless asked
		// (transports.md 8.5); here a CA file asks.
		o.QUIC.SkipCertificateVerification = !o.QUIC.ValidateCertificate
		if domain != "" {
			o.QUIC.ServerName = domain
		}
	}
	explicitCreds := a.changed("username") || a.changed("password") || a.changed("token")
	switch {
	case a.token != "":
		o.PersonalAccessToken = a.token
	case a.tokenName != "":
		if sess == nil || sess.TokenName != a.tokenName || sess.Token == "" {
			return client.Options{}, fmt.Errorf("--token-name %q: no stored token of that name (iggy login or pat create --store-token stores one)", a.tokenName)
		}
		o.PersonalAccessToken = sess.Token
		a.sessionToken = sess
	case sess != nil && !explicitCreds && sess.Token != "":
		o.PersonalAccessToken = sess.Token
		a.sessionToken = sess
	case ctxt != nil && !explicitCreds && ctxt.Token != "":
		o.PersonalAccessToken = ctxt.Token
	default:
		user, pass, err := a.resolveCredentials(ctxt)
		if err != nil {
			return client.Options{}, err
		}
		o.Username, o.Password = user, pass
	}
	a.debugf("connect", "transport", o.Transport, "address", o.Address, "tls", o.TLS.Enabled,
		"username", o.Username, "token", o.PersonalAccessToken != "", "session_token", a.sessionToken != nil)
	return o, nil
}

// resolveCredentials picks the username and password: flags, else the
// environment, else the context, else the root account's defaults; a
// username given without a password is asked for on a terminal, as the
// upstream CLI does.
func (a *app) resolveCredentials(ctxt *cliContext) (string, string, error) {
	user, pass := a.username, a.password
	if user == "" {
		user = os.Getenv("IGGY_USERNAME")
	}
	if pass == "" {
		pass = os.Getenv("IGGY_PASSWORD")
	}
	if ctxt != nil && user == "" && pass == "" {
		user, pass = ctxt.Username, ctxt.Password
	}
	if user != "" && pass == "" {
		p, ok, err := promptPassword(a.in, a.errOut, fmt.Sprintf("Password for %s: ", user))
		if err != nil {
			return "", "", err
		}
		if ok {
			return user, p, nil
		}
	}
	if user == "" {
		user = "iggy"
	}
	if pass == "" {
		pass = "iggy"
	}
	return user, pass, nil
}

// promptPassword reads a password from the terminal without echo; ok is
// false when standard input is not a terminal (scripts, tests), where the
// default applies. Tests replace it.
var promptPassword = func(in io.Reader, errOut io.Writer, prompt string) (string, bool, error) {
	f, isFile := in.(*os.File)
	if !isFile || !term.IsTerminal(int(f.Fd())) {
		return "", false, nil
	}
	fmt.Fprint(errOut, prompt)
	b, err := term.ReadPassword(int(f.Fd()))
	fmt.Fprintln(errOut)
	if err != nil {
		return "", false, fmt.Errorf("read password: %w", err)
	}
	return string(b), true, nil
}

// hint adds advice to an error the user can act on: a stored session's
// token refused (the session is stale, or was made on another server), or
// what the running command's errHint says.
func (a *app) hint(err error) string {
	if a.errHint != nil {
		if h := a.errHint(err); h != "" {
			return "\nhint: " + h
		}
	}
	if a.sessionToken == nil {
		return ""
	}
	if code, ok := wire.CodeOf(err); ok && (code == wire.ErrInvalidPersonalAccessToken || code == wire.ErrUnauthenticated) {
		path, _ := a.sessionPath()
		return fmt.Sprintf("\nhint: the token stored in %s (made by login on %s %s) was refused: "+
			"log in again with `iggy login`, or pass --username/--password", path, a.sessionToken.Transport, a.sessionToken.Address)
	}
	return ""
}

// connect returns the run's client, connecting and logging in on first use.
func (a *app) connect() (*client.Client, error) {
	if a.client != nil {
		return a.client, nil
	}
	o, err := a.options()
	if err != nil {
		return nil, err
	}
	c, err := client.Connect(a.ctx, o)
	if err != nil {
		return nil, err
	}
	a.client = c
	return c, nil
}

func (a *app) loginCommand() *cobra.Command {
	var expiry time.Duration
	var name string
	cmd := &cobra.Command{
		Use:     "login [EXPIRY...]",
		Aliases: []string{"li"},
		Short:   "Log in with username and password and store a new personal access token in the session file",
		Long: "Log in with username and password and store a new personal access token in the session file.\n" +
			"EXPIRY (upstream's form, e.g. 1h or 7 days, or --expiry) is the token's lifetime; none: never expires.",
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 {
				d, err := parseExpiry(args)
				if err != nil {
					return err
				}
				expiry = d
			}
			// Log in with the password even if an older session exists.
			a.token, a.tokenName = "", ""
			o, err := a.options()
			if err != nil {
				return err
			}
			if o.PersonalAccessToken != "" {
				ctxt, err := a.activeContext()
				if err != nil {
					return err
				}
				o.PersonalAccessToken = ""
				if o.Username, o.Password, err = a.resolveCredentials(ctxt); err != nil {
					return err
				}
			}
			a.sessionToken = nil
			c, err := client.Connect(a.ctx, o)
			if err != nil {
				return err
			}
			a.client = c
			if name == "" {
				host, _ := os.Hostname()
				name = fmt.Sprintf("iggy-cli-%s-%d", host, time.Now().Unix())
				if len(name) > 30 {
					name = fmt.Sprintf("iggy-cli-%d", time.Now().UnixNano())
				}
			}
			token, err := c.CreatePersonalAccessToken(a.ctx, name, uint64(expiry/time.Microsecond))
			if err != nil {
				return err
			}
			path, err := a.storeSession(o, name, token)
			if err != nil {
				return err
			}
			return a.print(map[string]string{"session_file": path, "token_name": name, "username": o.Username},
				func(t *table) {
					t.row("Logged in as", o.Username)
					t.row("Token", name)
					t.row("Session file", path)
				})
		},
	}
	cmd.Flags().DurationVar(&expiry, "expiry", 0, "token lifetime (0 = server default, never)")
	cmd.Flags().StringVar(&name, "token-name", "", "name of the personal access token (default iggy-cli-HOST-TIME)")
	return cmd
}

// storeSession writes the session file for a token just created.
func (a *app) storeSession(o client.Options, name, token string) (string, error) {
	return a.saveSession(&session{
		Transport: o.Transport, Address: o.Address, TLS: o.TLS.Enabled, TLSDomain: o.TLS.Domain,
		CAFile: o.TLS.CAFile, Insecure: o.TLS.InsecureSkipVerify,
		Username: o.Username, TokenName: name, Token: token,
	})
}

// parseExpiry reads upstream's EXPIRY words ("1h", "7 days", "1day 2h";
// "none", "unlimited" or "never_expire": never) as one duration.
func parseExpiry(words []string) (time.Duration, error) {
	s := strings.Join(words, " ")
	switch strings.ToLower(s) {
	case "none", "unlimited", "never_expire", "0":
		return 0, nil
	}
	d, err := units.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("expiry %q: %w", s, err)
	}
	return d, nil
}

func (a *app) logoutCommand() *cobra.Command {
	return &cobra.Command{
		Use:     "logout",
		Aliases: []string{"lo"},
		Short:   "Delete the session's personal access token and the session file",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			sess, err := a.loadSession()
			if err != nil {
				return err
			}
			if sess == nil {
				return errors.New("not logged in (no session file)")
			}
			c, err := a.connect()
			if err != nil {
				return err
			}
			if err := c.DeletePersonalAccessToken(a.ctx, sess.TokenName); err != nil {
				return err
			}
			path, _ := a.sessionPath()
			if err := os.Remove(path); err != nil {
				return err
			}
			return a.print(map[string]string{"session_file": path, "token_name": sess.TokenName},
				func(t *table) { t.row("Logged out; deleted token", sess.TokenName) })
		},
	}
}

// sessionCommand groups login, logout and a look at the stored session.
func (a *app) sessionCommand() *cobra.Command {
	show := &cobra.Command{
		Use: "show", Aliases: []string{"status"}, Short: "Show the stored session (never its token)", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			sess, err := a.loadSession()
			if err != nil {
				return err
			}
			path, _ := a.sessionPath()
			if sess == nil {
				return a.print(map[string]any{"session_file": path, "logged_in": false},
					func(t *table) { t.row("Not logged in; no session file at", path) })
			}
			return a.print(map[string]any{"session_file": path, "logged_in": true, "transport": sess.Transport,
				"address": sess.Address, "username": sess.Username, "token_name": sess.TokenName},
				func(t *table) {
					t.row("Session file", path)
					t.row("Server", sess.Transport+" "+sess.Address)
					t.row("Username", sess.Username)
					t.row("Token", sess.TokenName)
				})
		},
	}
	return noun("session", "Log in and out, and show the stored session", a.loginCommand(), a.logoutCommand(), show)
}
