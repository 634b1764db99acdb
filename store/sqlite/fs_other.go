//go:build !linux

package sqlite

// walUnsafeFS cannot tell network filesystems apart off Linux; WAL is assumed safe.
func walUnsafeFS(string) (string, bool) { return "", false }
