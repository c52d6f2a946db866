package cli

import (
	"fmt"

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
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := loadConfig(cmd)
			if err != nil {
				return err
			}
			out, err := config.Show(cfg)
			if err != nil {
				return err
			}
			_, err = cmd.OutOrStdout().Write(out)
			return err
		},
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
