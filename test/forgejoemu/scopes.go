package forgejoemu

import (
	"fmt"
	"strings"
)

// scopeCategory is one of Forgejo's access token scope categories.
type scopeCategory string

// The categories of Forgejo's token scopes.
const (
	categoryActivityPub  scopeCategory = "activitypub"
	categoryAdmin        scopeCategory = "admin"
	categoryMisc         scopeCategory = "misc"
	categoryNotification scopeCategory = "notification"
	categoryOrganization scopeCategory = "organization"
	categoryPackage      scopeCategory = "package"
	categoryIssue        scopeCategory = "issue"
	categoryRepository   scopeCategory = "repository"
	categoryUser         scopeCategory = "user"
)

var allCategories = []scopeCategory{
	categoryActivityPub, categoryAdmin, categoryMisc, categoryNotification,
	categoryOrganization, categoryPackage, categoryIssue, categoryRepository, categoryUser,
}

// scopeLevel orders access within a category: write implies read.
type scopeLevel int

const (
	levelNone scopeLevel = iota
	levelRead
	levelWrite
)

// String is the level as it appears in a scope name.
func (l scopeLevel) String() string {
	if l == levelWrite {
		return "write"
	}
	return "read"
}

const (
	scopeAll        = "all"
	scopePublicOnly = "public-only"
)

// scopeSet is a parsed token scope.
type scopeSet struct {
	levels     map[scopeCategory]scopeLevel
	publicOnly bool
}

// parseScope parses a stored comma-separated scope the way Forgejo does:
// empty items and "sudo" are ignored, "all" grants write on every category,
// and anything unknown is an error.
func parseScope(s string) (scopeSet, error) {
	set := scopeSet{levels: map[scopeCategory]scopeLevel{}}
	for _, item := range strings.Split(s, ",") {
		switch item {
		case "", "sudo":
			continue
		case scopeAll:
			for _, c := range allCategories {
				set.levels[c] = levelWrite
			}
			continue
		case scopePublicOnly:
			set.publicOnly = true
			continue
		}
		level, cat, ok := strings.Cut(item, ":")
		if !ok || !knownCategory(scopeCategory(cat)) {
			return scopeSet{}, fmt.Errorf("invalid access token scope: %s", item)
		}
		var l scopeLevel
		switch level {
		case "read":
			l = levelRead
		case "write":
			l = levelWrite
		default:
			return scopeSet{}, fmt.Errorf("invalid access token scope: %s", item)
		}
		if l > set.levels[scopeCategory(cat)] {
			set.levels[scopeCategory(cat)] = l
		}
	}
	return set, nil
}

func knownCategory(c scopeCategory) bool {
	for _, k := range allCategories {
		if k == c {
			return true
		}
	}
	return false
}

// has reports whether the set grants level on every category.
func (s scopeSet) has(level scopeLevel, cats ...scopeCategory) bool {
	for _, c := range cats {
		if s.levels[c] < level {
			return false
		}
	}
	return true
}

// requiredScopes renders the scopes a route needs the way Forgejo's 403
// message does: "[read:repository]".
func requiredScopes(level scopeLevel, cats ...scopeCategory) string {
	names := make([]string, len(cats))
	for i, c := range cats {
		names[i] = level.String() + ":" + string(c)
	}
	return "[" + strings.Join(names, " ") + "]"
}
