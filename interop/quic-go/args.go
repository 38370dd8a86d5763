package main

import (
	"errors"
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

// clientTargets parses a hq or h3 client's flags and URLs, as both take
// them: --output-dir is required, --ca and --insecure exclude each other,
// and every URL is https. It returns the URLs as given and what they name.
func clientTargets(set *flag.FlagSet, args []string, ca *string, insecure *bool) ([]string, []target, error) {
	urls, err := parseInterspersed(set, args)
	if err != nil {
		return nil, nil, err
	}
	if err := required(set, "output-dir"); err != nil {
		return nil, nil, err
	}
	if *ca != "" && *insecure {
		return nil, nil, errors.New("--ca and --insecure exclude each other")
	}
	targets, err := parseTargets(urls, "https")
	return urls, targets, err
}
