package cli

import (
	"fmt"

	"github.com/spf13/cobra"

	"drover/auth"
)

func newKeygenCmd() *cobra.Command {
	var (
		out   string
		force bool
	)
	cmd := &cobra.Command{
		Use:   "keygen --out PREFIX",
		Short: "Make a CURVE key pair: PREFIX.key (secret, mode 0600) and PREFIX.pub",
		Long: `keygen makes a CURVE key pair for drover's encrypted, authenticated transport
(docs/PROTOCOL.md, section 15) and writes PREFIX.key, the secret key (mode 0600;
keep it on the machine that uses it), and PREFIX.pub, the public key (give it to
the other side: a server's to its clients as --server-key, a client's to the
server's authorized_keys file). A missing directory is created with mode 0700.
Existing files are never overwritten unless --force is given.

Both files are text: '#' comment lines and one line of 40 Z85 characters. The
key itself may also be given inline wherever a key file is accepted
(--key, --server-key, DROVER_SECURITY_KEY, DROVER_SECURITY_SERVER_KEY).`,
		Example: `  drover keygen --out /etc/drover/server
  drover keygen --out ~/.config/drover/worker
  echo "worker $(grep -v '^#' ~/.config/drover/worker.pub) alice-laptop" >> /etc/drover/authorized_keys`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if out == "" {
				return usageError("keygen: --out PREFIX is required (writes PREFIX.key and PREFIX.pub)")
			}
			kp, err := auth.WriteKeyPair(out, force)
			if err != nil {
				return fmt.Errorf("keygen: %w", err)
			}
			w := cmd.OutOrStdout()
			fmt.Fprintf(w, "secret key: %s.key (mode 0600: keep it private)\n", out)
			fmt.Fprintf(w, "public key: %s.pub\n%s\n", out, kp.Public)
			return nil
		},
	}
	cmd.Flags().StringVar(&out, "out", "", "path prefix of the two files: PREFIX.key and PREFIX.pub")
	cmd.Flags().BoolVar(&force, "force", false, "replace existing key files")
	return cmd
}
