package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/spf13/cobra"

	"iggynode/client"
	"iggynode/internal/version"
	"iggynode/wire"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// run executes one CLI invocation and returns the process exit code; tests
// call it in-process with captured streams.
func run(ctx context.Context, args []string, in io.Reader, out, errOut io.Writer) int {
	a := &app{ctx: ctx, in: in, out: out, errOut: errOut}
	root := a.rootCommand()
	root.SetArgs(normalizeGlobalArgs(root, args))
	root.SetIn(in)
	root.SetOut(out)
	root.SetErr(errOut)
	err := root.ExecuteContext(ctx)
	a.close()
	a.debugf("done", "err", err)
	if a.debugFile != nil {
		_ = a.debugFile.Close()
	}
	if err != nil {
		fmt.Fprintln(errOut, "error: "+describeError(err)+a.hint(err))
		return 1
	}
	return 0
}

// globalShorts are the upstream CLI's one-letter global options. Upstream
// (clap) takes them before the subcommand only, where they cannot clash
// with a subcommand's own letters (message send -p PARTITION, poll -o
// OFFSET, user create -u STATUS): normalizeGlobalArgs spells them out
// there, and after the subcommand the letters belong to it.
var globalShorts = map[string]string{
	"-q": "--quiet", "-d": "--debug", "-u": "--username", "-p": "--password",
	"-t": "--token", "-n": "--token-name", "-o": "--output",
}

// normalizeGlobalArgs rewrites the global short options that stand before
// the first command word into their long forms.
func normalizeGlobalArgs(root *cobra.Command, args []string) []string {
	out := make([]string, 0, len(args))
	for i := 0; i < len(args); i++ {
		arg := args[i]
		if arg == "--" || !strings.HasPrefix(arg, "-") {
			return append(out, args[i:]...) // the command word: the rest is its own
		}
		short, value, hasValue := strings.Cut(arg, "=")
		if long, ok := globalShorts[short]; ok {
			arg = long
			if hasValue {
				arg += "=" + value
			}
		}
		out = append(out, arg)
		// A flag that takes a value consumes the next word.
		name, _, inline := strings.Cut(strings.TrimLeft(arg, "-"), "=")
		if f := root.PersistentFlags().Lookup(name); f != nil && !inline && f.NoOptDefVal == "" && i+1 < len(args) {
			i++
			out = append(out, args[i])
		}
	}
	return out
}

// describeError names the IggyError behind err ("StreamNameAlreadyExists
// (1012)") when there is one, so scripts can match on the code.
func describeError(err error) string {
	var code wire.ErrorCode
	if !errors.As(err, &code) {
		return err.Error()
	}
	// Keep the cause when the code alone hides it (a TLS failure is just
	// CannotEstablishConnection otherwise).
	if msg := err.Error(); !strings.Contains(msg, code.Error()) {
		return code.Error() + ": " + msg
	}
	return code.Error()
}

// app holds the global flags and the lazily connected client of one run.
type app struct {
	ctx         context.Context
	in          io.Reader
	out, errOut io.Writer

	transport   string
	address     string
	username    string
	password    string
	token       string
	connString  string
	tls         bool
	tlsDomain   string
	caFile      string
	insecure    bool
	output      string
	sessionFile string
	retries     int
	quiet       bool
	debug       string
	debugFile   io.WriteCloser
	debugLog    *slog.Logger
	tokenName   string
	context     string // --context: a named context instead of the active one
	listMode    string
	// statusPartitions: cluster status lists every partition (--partitions).
	statusPartitions bool
	// sessionToken is the stored session whose token this run logs in
	// with (for the hint when the server refuses it).
	sessionToken *session
	// errHint, set by a command once connected, advises on its own
	// failures (the cluster commands' refusals).
	errHint func(error) string

	root   *cobra.Command
	client *client.Client
}

func (a *app) rootCommand() *cobra.Command {
	root := &cobra.Command{
		Use:           "iggy",
		Short:         "Command-line client for an Iggy-compatible server (iggynode)",
		SilenceErrors: true,
		SilenceUsage:  true,
		Version:       version.Node,
		PersistentPreRunE: func(cmd *cobra.Command, _ []string) error {
			if a.quiet {
				a.out = io.Discard // errors still reach stderr
			}
			if err := a.openDebug(cmd); err != nil {
				return err
			}
			switch a.output {
			case "table", "json":
			default:
				return fmt.Errorf("--output must be table or json, not %q", a.output)
			}
			switch a.transport {
			case client.TransportTCP, client.TransportQUIC, client.TransportWS, client.TransportHTTP:
			default:
				return fmt.Errorf("--transport must be tcp, quic, ws or http, not %q", a.transport)
			}
			return nil
		},
	}
	a.root = root
	root.SetVersionTemplate(version.Line("iggy") + "\n")
	f := root.PersistentFlags()
	f.StringVar(&a.transport, "transport", client.TransportTCP, "transport: tcp, quic, ws or http (the REST API)")
	f.StringVar(&a.address, "address", "", "server address (default 127.0.0.1:8090 tcp, 127.0.0.1:8080 quic, 127.0.0.1:8092 ws)")
	// The defaults are resolved in credentials(), not shown here, so --help
	// never prints a password taken from the environment.
	f.StringVar(&a.username, "username", "", "username (default $IGGY_USERNAME, else iggy)")
	f.StringVar(&a.password, "password", "", "password (default $IGGY_PASSWORD, else iggy)")
	f.StringVar(&a.token, "token", "", "personal access token (instead of username and password)")
	f.StringVar(&a.connString, "connection-string", "", "iggy://user:pass@host:port?options (overrides the other connection flags)")
	f.BoolVar(&a.tls, "tls", false, "use TLS (TCP+TLS or WSS; QUIC always uses TLS)")
	f.StringVar(&a.tlsDomain, "tls-domain", "", "server name to verify (default: the address's host, localhost for QUIC)")
	f.StringVar(&a.caFile, "tls-ca-file", "", "PEM file of the CA that signed the server certificate")
	f.BoolVar(&a.insecure, "insecure", false, "do not verify the server certificate")
	f.StringVar(&a.output, "output", "table", "output format: table or json; -o before the command")
	f.IntVar(&a.retries, "reconnect-retries", 10, "connection attempts after a failure, 1 s apart (transports.md 8.5; -1 unlimited)")
	f.StringVar(&a.sessionFile, "session-file", "", "session file (default $XDG_CONFIG_HOME/iggy/session.json)")
	f.BoolVar(&a.quiet, "quiet", false, "print nothing on standard output (errors still go to standard error); -q before the command")
	f.StringVar(&a.debug, "debug", "", "log connection and command details to FILE (bare --debug: standard error); -d before the command")
	f.Lookup("debug").NoOptDefVal = "-"
	f.StringVar(&a.tokenName, "token-name", "", "log in with the personal access token of this name stored by login or pat create --store-token")
	f.StringVar(&a.context, "context", "", "use this context (see iggy context) instead of the active one")
	// Upstream's per-transport address flags; --address says the same.
	for _, alias := range []string{"tcp-server-address", "quic-server-address", "websocket-server-address"} {
		f.StringVar(&a.address, alias, "", "server address for that transport (same as --address)")
		_ = f.MarkHidden(alias)
	}

	root.AddCommand(
		a.loginCommand(), a.logoutCommand(), a.sessionCommand(), a.contextCommand(),
		a.streamCommand(), a.topicCommand(), a.partitionCommand(), a.segmentCommand(),
		a.messageCommand(), a.offsetCommand(), a.groupCommand(),
		a.userCommand(), a.patCommand(), a.clientCommand(),
		a.meCommand(), a.statsCommand(), a.snapshotCommand(), a.clusterCommand(), a.optionsCommand(), a.pingCommand(),
	)
	return root
}

// openDebug starts the --debug log: to standard error, or appended to the
// file given.
func (a *app) openDebug(cmd *cobra.Command) error {
	if a.debug == "" {
		return nil
	}
	w := a.errOut
	if a.debug != "-" {
		f, err := os.OpenFile(a.debug, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
		if err != nil {
			return fmt.Errorf("--debug: %w", err)
		}
		a.debugFile, w = f, f
	}
	a.debugLog = slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: slog.LevelDebug}))
	a.debugf("command", "path", cmd.CommandPath(), "version", version.Line("iggy"))
	return nil
}

// debugf writes one --debug line; nothing without --debug.
func (a *app) debugf(msg string, args ...any) {
	if a.debugLog != nil {
		a.debugLog.Debug(msg, args...)
	}
}

func (a *app) close() {
	if a.client != nil {
		_ = a.client.Close()
		a.client = nil
	}
}
