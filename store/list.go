package store

import (
	"cmp"
	"slices"
)

// ArrangeTrees orders the rows a backend read for a Trees listing (ListOptions.Trees): roots
// holds the page's tree roots in listing order; rows holds every listed session of those trees
// once, each branch with TreeParent set and each row that does not match the filters marked
// Unmatched. The result is each root followed by its branches depth first, siblings newest
// activity first (then by id, descending, as the roots are); a branch with no match at or under
// it is left out, a root never is. Backends call it so both list trees alike.
func ArrangeTrees(roots []string, rows []SessionListing) []SessionListing {
	byID := make(map[string]int, len(rows))
	for i, r := range rows {
		byID[r.ID] = i
	}
	isRoot := make(map[string]bool, len(roots))
	for _, id := range roots {
		isRoot[id] = true
	}
	children := map[string][]int{}
	for i, r := range rows {
		if isRoot[r.ID] {
			rows[i].TreeParent = ""
			continue
		}
		if _, ok := byID[r.TreeParent]; ok && r.TreeParent != r.ID {
			children[r.TreeParent] = append(children[r.TreeParent], i)
		}
	}
	newest := func(a, b int) int {
		if c := rows[b].LastActive.Compare(rows[a].LastActive); c != 0 {
			return c
		}
		return cmp.Compare(rows[b].ID, rows[a].ID)
	}
	for _, kids := range children {
		slices.SortFunc(kids, newest)
	}
	// keep reports whether a row or a row under it matches; memoised, and guarded against a
	// cycle (which the schema cannot make: a parent exists before its branch).
	kept := map[int]bool{}
	var keep func(i int, seen map[int]bool) bool
	keep = func(i int, seen map[int]bool) bool {
		if k, ok := kept[i]; ok {
			return k
		}
		if seen[i] {
			return false
		}
		seen[i] = true
		k := !rows[i].Unmatched
		for _, c := range children[rows[i].ID] {
			if keep(c, seen) {
				k = true
			}
		}
		kept[i] = k
		return k
	}
	out := make([]SessionListing, 0, len(rows))
	emitted := map[int]bool{}
	var emit func(i int)
	emit = func(i int) {
		if emitted[i] {
			return
		}
		emitted[i] = true
		out = append(out, rows[i])
		for _, c := range children[rows[i].ID] {
			if keep(c, map[int]bool{}) {
				emit(c)
			}
		}
	}
	for _, id := range roots {
		if i, ok := byID[id]; ok {
			emit(i)
		}
	}
	return out
}
