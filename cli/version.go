package cli

import (
	"fmt"
	"runtime"

	"github.com/pebbe/zmq4"
	"github.com/spf13/cobra"
)

func newVersionCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print drover's version, commit and build date, and the libzmq it runs on",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			major, minor, patch := zmq4.Version()
			curve := "no"
			if zmq4.HasCurve() {
				curve = "yes"
			}
			_, err := fmt.Fprintf(cmd.OutOrStdout(), "drover %s (commit %s, built %s, %s %s/%s)\nlibzmq %d.%d.%d, CURVE security available: %s\n",
				version, commit, date, runtime.Version(), runtime.GOOS, runtime.GOARCH, major, minor, patch, curve)
			return err
		},
	}
}
