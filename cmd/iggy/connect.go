package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"iggynode/client"
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

func (a *app) sessionPath() (string, error) {
	if a.sessionFile != "" {
		return a.sessionFile, nil
	}
	dir := os.Getenv("XDG_CONFIG_HOME")
	if dir == "" {
		var err error
		if dir, err = os.UserConfigDir(); err != nil {
			return "", err
		}
	}
	return filepath.Join(dir, "iggy", "session.json"), nil
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

// changed reports whether a global flag was given on the command line.
func (a *app) changed(name string) bool {
	f := a.root.PersistentFlags().Lookup(name)
	return f != nil && f.Changed
}

// options builds the client options: a connection string wins outright;
// otherwise a stored session supplies whatever the flags do not.
func (a *app) options() (client.Options, error) {
	if a.connString != "" {
		return client.ParseConnectionString(a.connString)
	}
	sess, err := a.loadSession()
	if err != nil {
		return client.Options{}, err
	}
	transport, address := a.transport, a.address
	tlsOn, domain, caFile, insecure := a.tls, a.tlsDomain, a.caFile, a.insecure
	if sess != nil {
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
	case sess != nil && !explicitCreds && sess.Token != "":
		o.PersonalAccessToken = sess.Token
	default:
		o.Username, o.Password = a.credentials()
	}
	return o, nil
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
		Use:   "login",
		Short: "Log in with username and password and store a new personal access token in the session file",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			// Log in with the password even if an older session exists.
			a.token = ""
			o, err := a.options()
			if err != nil {
				return err
			}
			if o.PersonalAccessToken != "" {
				o.PersonalAccessToken = ""
				o.Username, o.Password = a.credentials()
			}
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
			s := &session{
				Transport: o.Transport, Address: o.Address, TLS: o.TLS.Enabled, TLSDomain: o.TLS.Domain,
				CAFile: o.TLS.CAFile, Insecure: o.TLS.InsecureSkipVerify,
				Username: o.Username, TokenName: name, Token: token,
			}
			path, err := a.saveSession(s)
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

func (a *app) logoutCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "logout",
		Short: "Delete the session's personal access token and the session file",
		Args:  cobra.NoArgs,
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
