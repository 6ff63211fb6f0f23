package cmdline

import "flag"

// Parse parses args with fs, letting operands (the arguments that are not
// flags) stand between flags as getopt allows, and returns the operands in
// their order. An error is fs.Parse's (flag.ErrHelp for -h).
func Parse(fs *flag.FlagSet, args []string) ([]string, error) {
	var operands []string
	for {
		if err := fs.Parse(args); err != nil {
			return operands, err
		}
		if fs.NArg() == 0 {
			return operands, nil
		}
		operands = append(operands, fs.Arg(0))
		args = fs.Args()[1:]
	}
}
