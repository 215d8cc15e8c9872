package config

import (
	"fmt"
	"math"
)

// The rules of the settings. Each names the setting by its flag.

// firstError is the first of errs that is not nil.
func firstError(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// failIf is the error that format describes if bad holds.
func failIf(bad bool, format string, args ...any) error {
	if bad {
		return fmt.Errorf(format, args...)
	}
	return nil
}

// number is what the numeric settings are (time.Duration among them).
type number interface{ ~int | ~int64 }

func positive[T number](flag string, v T) error {
	return failIf(v <= 0, "%s: must be positive, not %v", flag, v)
}

// notNegative: 0 means no limit or no cap, as none says, if it is not "".
func notNegative[T number](flag string, v T, none string) error {
	if none != "" {
		return failIf(v < 0, "%s: must not be negative (0 for no %s), not %v", flag, none, v)
	}
	return failIf(v < 0, "%s: must not be negative, not %v", flag, v)
}

func finiteRate(flag string, v float64) error {
	return failIf(v < 0 || math.IsNaN(v) || math.IsInf(v, 0), "%s: must be a finite number >= 0, not %v", flag, v)
}
