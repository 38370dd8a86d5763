package main

import (
	"flag"
	"fmt"
	"io"
	"strings"
)

// parseInterspersed parses flags that may come before, between or after
// the positional arguments (clap's way, which the Rust peers' callers
// use: `client URL... --output-dir DIR`); `--` ends the flags.
func parseInterspersed(set *flag.FlagSet, args []string) ([]string, error) {
	set.SetOutput(io.Discard)
	var positional []string
	for {
		if err := set.Parse(args); err != nil {
			return nil, fmt.Errorf("%s: %w", set.Name(), err)
		}
		rest := set.Args()
		if len(rest) == 0 {
			return positional, nil
		}
		if rest[0] == "--" {
			return append(positional, rest[1:]...), nil
		}
		positional = append(positional, rest[0])
		args = rest[1:]
	}
}

// required fails naming the first flag in names that was left empty.
func required(set *flag.FlagSet, names ...string) error {
	for _, name := range names {
		if f := set.Lookup(name); f != nil && strings.TrimSpace(f.Value.String()) == "" {
			return fmt.Errorf("--%s is required", name)
		}
	}
	return nil
}
