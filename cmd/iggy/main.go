package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/spf13/cobra"

	"iggynode/client"
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
	root.SetArgs(args)
	root.SetIn(in)
	root.SetOut(out)
	root.SetErr(errOut)
	err := root.ExecuteContext(ctx)
	a.close()
	if err != nil {
		fmt.Fprintln(errOut, "error: "+describeError(err))
		return 1
	}
	return 0
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

	root   *cobra.Command
	client *client.Client
}

func (a *app) rootCommand() *cobra.Command {
	root := &cobra.Command{
		Use:           "iggy",
		Short:         "Command-line client for an Iggy-compatible server (iggynode)",
		SilenceErrors: true,
		SilenceUsage:  true,
		PersistentPreRunE: func(cmd *cobra.Command, _ []string) error {
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
	f.StringVarP(&a.output, "output", "o", "table", "output format: table or json")
	f.IntVar(&a.retries, "reconnect-retries", 10, "connection attempts after a failure, 1 s apart (transports.md 8.5; -1 unlimited)")
	f.StringVar(&a.sessionFile, "session-file", "", "session file (default $XDG_CONFIG_HOME/iggy/session.json)")

	root.AddCommand(
		a.loginCommand(), a.logoutCommand(),
		a.streamCommand(), a.topicCommand(), a.partitionCommand(), a.segmentCommand(),
		a.messageCommand(), a.offsetCommand(), a.groupCommand(),
		a.userCommand(), a.patCommand(), a.clientCommand(),
		a.meCommand(), a.statsCommand(), a.snapshotCommand(), a.clusterCommand(), a.optionsCommand(), a.pingCommand(),
	)
	return root
}

// credentials returns the username and password: flags, else the
// IGGY_USERNAME / IGGY_PASSWORD environment (transports.md 8.5), else the
// server's default root account.
func (a *app) credentials() (string, string) {
	pick := func(flag, env string) string {
		if flag != "" {
			return flag
		}
		if v := os.Getenv(env); v != "" {
			return v
		}
		return "iggy"
	}
	return pick(a.username, "IGGY_USERNAME"), pick(a.password, "IGGY_PASSWORD")
}

func (a *app) close() {
	if a.client != nil {
		_ = a.client.Close()
		a.client = nil
	}
}
