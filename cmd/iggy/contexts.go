package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/BurntSushi/toml"
	"github.com/spf13/cobra"
)

// Contexts, as upstream's CLI keeps them: named connection settings in
// $XDG_CONFIG_HOME/iggy/contexts.toml and the active one's name in
// active_context beside it. "default" always exists and says nothing (the
// flags' defaults). Each context has its own session file.
const defaultContext = "default"

// cliContext is one context's settings; every field is optional.
type cliContext struct {
	Transport string `toml:"transport,omitempty"`
	Address   string `toml:"address,omitempty"`
	TLS       bool   `toml:"tls,omitempty"`
	TLSDomain string `toml:"tls_domain,omitempty"`
	CAFile    string `toml:"tls_ca_file,omitempty"`
	Insecure  bool   `toml:"insecure,omitempty"`
	Username  string `toml:"username,omitempty"`
	// Password and Token are read when the user writes them in the file;
	// context create never stores them (login stores a token instead).
	Password string `toml:"password,omitempty"`
	Token    string `toml:"token,omitempty"`
}

type contextsFile struct {
	Contexts map[string]cliContext `toml:"contexts"`
}

func contextPaths() (file, active string, err error) {
	dir, err := configDir()
	if err != nil {
		return "", "", err
	}
	return filepath.Join(dir, "contexts.toml"), filepath.Join(dir, "active_context"), nil
}

func loadContexts() (*contextsFile, error) {
	path, _, err := contextPaths()
	if err != nil {
		return nil, err
	}
	cf := &contextsFile{Contexts: map[string]cliContext{}}
	if _, err := toml.DecodeFile(path, cf); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("contexts file %s: %w", path, err)
	}
	if cf.Contexts == nil {
		cf.Contexts = map[string]cliContext{}
	}
	return cf, nil
}

func (cf *contextsFile) save() error {
	path, _, err := contextPaths()
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	if err := toml.NewEncoder(f).Encode(cf); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// contextName is --context, else the active context, else default.
func (a *app) contextName() (string, error) {
	if a.context != "" {
		return a.context, nil
	}
	_, active, err := contextPaths()
	if err != nil {
		return "", err
	}
	b, err := os.ReadFile(active)
	if errors.Is(err, fs.ErrNotExist) {
		return defaultContext, nil
	}
	if err != nil {
		return "", err
	}
	if name := strings.TrimSpace(string(b)); name != "" {
		return name, nil
	}
	return defaultContext, nil
}

// activeContext returns the settings of the context in use (nil for the
// default context, or one the file does not define).
func (a *app) activeContext() (*cliContext, error) {
	name, err := a.contextName()
	if err != nil || name == defaultContext {
		return nil, err
	}
	cf, err := loadContexts()
	if err != nil {
		return nil, err
	}
	c, ok := cf.Contexts[name]
	if !ok {
		return nil, fmt.Errorf("context %q is not defined (iggy context list)", name)
	}
	return &c, nil
}

// apply fills the connection settings the flags left unsaid.
func (c *cliContext) apply(a *app, transport, address *string, tlsOn *bool, domain, caFile *string, insecure *bool) {
	if !a.changed("transport") && c.Transport != "" {
		*transport = c.Transport
	}
	if !a.changed("address") && c.Address != "" {
		*address = c.Address
	}
	if !a.changed("tls") && c.TLS {
		*tlsOn = true
	}
	if !a.changed("tls-domain") && c.TLSDomain != "" {
		*domain = c.TLSDomain
	}
	if !a.changed("tls-ca-file") && c.CAFile != "" {
		*caFile = c.CAFile
	}
	if !a.changed("insecure") && c.Insecure {
		*insecure = true
	}
}

func (a *app) contextCommand() *cobra.Command {
	list := &cobra.Command{
		Use: "list", Aliases: []string{"l"}, Short: "List the contexts; * marks the active one", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cf, err := loadContexts()
			if err != nil {
				return err
			}
			active, err := a.contextName()
			if err != nil {
				return err
			}
			names := []string{defaultContext}
			for name := range cf.Contexts {
				if name != defaultContext {
					names = append(names, name)
				}
			}
			slices.Sort(names[1:])
			type row struct {
				Name      string `json:"name"`
				Active    bool   `json:"active"`
				Transport string `json:"transport"`
				Address   string `json:"address"`
				Username  string `json:"username"`
			}
			var rows []row
			for _, n := range names {
				c := cf.Contexts[n]
				rows = append(rows, row{n, n == active, c.Transport, c.Address, c.Username})
			}
			return a.print(rows, func(t *table) {
				t.row("", "NAME", "TRANSPORT", "ADDRESS", "USERNAME")
				for _, r := range rows {
					mark := ""
					if r.Active {
						mark = "*"
					}
					t.row(mark, r.Name, dash(r.Transport), dash(r.Address), dash(r.Username))
				}
			})
		},
	}
	use := &cobra.Command{
		Use: "use NAME", Aliases: []string{"u"}, Short: "Make NAME the active context", Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			name := args[0]
			if name != defaultContext {
				cf, err := loadContexts()
				if err != nil {
					return err
				}
				if _, ok := cf.Contexts[name]; !ok {
					return fmt.Errorf("context %q is not defined (iggy context create %s --address ...)", name, name)
				}
			}
			_, active, err := contextPaths()
			if err != nil {
				return err
			}
			if err := os.MkdirAll(filepath.Dir(active), 0o700); err != nil {
				return err
			}
			if err := os.WriteFile(active, []byte(name+"\n"), 0o600); err != nil {
				return err
			}
			return a.printDone("context "+name+" is active", map[string]any{"context": name})
		},
	}
	create := &cobra.Command{
		Use: "create NAME", Aliases: []string{"c"}, Args: cobra.ExactArgs(1),
		Short: "Define context NAME from the connection flags given (--transport, --address, --username, --tls...)",
		RunE: func(cmd *cobra.Command, args []string) error {
			name := args[0]
			if name == defaultContext || strings.ContainsAny(name, `/\ `) {
				return fmt.Errorf("context name %q: not %q, no spaces or slashes", name, defaultContext)
			}
			cf, err := loadContexts()
			if err != nil {
				return err
			}
			cf.Contexts[name] = cliContext{Transport: pick(a.changed("transport"), a.transport), Address: a.address,
				TLS: a.tls, TLSDomain: a.tlsDomain, CAFile: a.caFile, Insecure: a.insecure, Username: a.username}
			if err := cf.save(); err != nil {
				return err
			}
			return a.printDone("context "+name+" created", map[string]any{"context": name})
		},
	}
	del := &cobra.Command{
		Use: "delete NAME", Aliases: []string{"d"}, Short: "Delete context NAME", Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			cf, err := loadContexts()
			if err != nil {
				return err
			}
			if _, ok := cf.Contexts[args[0]]; !ok {
				return fmt.Errorf("context %q is not defined", args[0])
			}
			delete(cf.Contexts, args[0])
			if err := cf.save(); err != nil {
				return err
			}
			return a.printDone("context "+args[0]+" deleted", map[string]any{"context": args[0]})
		},
	}
	c := noun("context", "Manage named connection contexts (upstream's contexts.toml)", list, use, create, del)
	c.Aliases = []string{"ctx"}
	return c
}

func pick(set bool, v string) string {
	if set {
		return v
	}
	return ""
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
