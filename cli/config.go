package cli

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"drover/config"
)

func newConfigCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "config",
		Short: "Show the effective configuration or check a config file",
	}
	cmd.AddCommand(&cobra.Command{
		Use:   "show",
		Short: "Print the effective configuration (flags > environment > file > defaults) as YAML",
		Example: `  drover config show
  DROVER_HEARTBEAT_INTERVAL=2s drover config show --config ./drover.yaml`,
		Args: cobra.NoArgs,
		RunE: withConfig(func(cmd *cobra.Command, cfg *config.Config) error {
			out, err := config.Show(cfg)
			if err != nil {
				return err
			}
			_, err = cmd.OutOrStdout().Write(out)
			return err
		}),
	}, &cobra.Command{
		Use:     "check [FILE]",
		Short:   "Validate a config file (or the one drover would read) and exit 0, or 2 with every problem",
		Example: `  drover config check /etc/drover/drover.yaml`,
		Args:    cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 1 {
				if err := cmd.Flags().Set(configFlag, args[0]); err != nil {
					return err
				}
			}
			cfg, err := loadConfig(cmd)
			if err != nil {
				return err
			}
			src := cfg.File
			if src == "" {
				src = "defaults and environment (no config file found)"
			}
			_, err = fmt.Fprintf(cmd.OutOrStdout(), "ok: %s\n", src)
			return err
		},
	})
	return cmd
}

// statePath is name in drover's state directory, $XDG_STATE_HOME/drover
// (~/.local/state/drover without it): the default of the config key key
// when it is empty.
func statePath(key, name string) (string, error) {
	dir := os.Getenv("XDG_STATE_HOME")
	if dir == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return "", fmt.Errorf("%s is empty and there is no $XDG_STATE_HOME or home directory to default to: %w", key, err)
		}
		dir = filepath.Join(home, ".local", "state")
	}
	return filepath.Join(dir, "drover", name), nil
}
