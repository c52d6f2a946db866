// Command drover is a work coordinator and job broker for distributed
// crawlers, with a terminal operations console. See README.md.
package main

import (
	"os"

	"drover/cli"
)

func main() {
	os.Exit(cli.Main(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}
