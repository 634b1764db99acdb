package fake

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/spoolhq/spool/store"
)

// guideIntent is what a first-time user of the offline model is likely to ask about the
// directory they are in.
var guideIntent = regexp.MustCompile(`(?i)\b(files?|director(y|ies)|folders?|list|ls|summari[sz]e|overview|what is here|look around)\b`)

// guideArgs are the arguments of the listing the guide makes.
const guideArgs = `{"dir":"."}`

// guided is the offline model's help for a person trying spool without a provider
// (Config.Guide): a plain message (no directives) about the files here makes it list the working
// directory with the list_files tool, as an agent would, and then describe what it found and what
// it is; ok is false for everything else, which the script answers as usual.
func guided(c call, seed, configPath string) (text string, calls []store.ToolCall, finish string, ok bool) {
	if len(c.msgs) == 0 || !offers(c, "list_files") {
		return "", nil, "", false
	}
	last := c.msgs[len(c.msgs)-1]
	switch last.Role {
	case "user":
		d := parseDirectives(last.Content)
		if d.badLine != "" || len(d.say) > 0 || len(d.calls) > 0 || d.fault != nil || !guideIntent.MatchString(last.Content) {
			return "", nil, "", false
		}
		return "", []store.ToolCall{{ID: c.idPrefix + shortHash(seed+"guide", 24), Type: "function",
			Function: store.ToolFunction{Name: "list_files", Arguments: guideArgs}}}, "tool_calls", true
	case "tool":
		// The listing the guide asked for: one list_files call answering a user message that
		// had no CALL directive of its own.
		if len(c.msgs) < 3 {
			return "", nil, "", false
		}
		prev, ask := c.msgs[len(c.msgs)-2], c.msgs[len(c.msgs)-3]
		if len(prev.ToolCalls) != 1 || prev.ToolCalls[0].Function.Name != "list_files" ||
			prev.ToolCalls[0].Function.Arguments != guideArgs || ask.Role != "user" || len(parseDirectives(ask.Content).calls) > 0 {
			return "", nil, "", false
		}
		return describeListing(last.Content, configPath), nil, "stop", true
	}
	return "", nil, "", false
}

func offers(c call, name string) bool {
	for _, t := range c.tools {
		if t.Name == name {
			return true
		}
	}
	return false
}

// describeListing sums up list_files output and says what the offline model is and which config
// file (configPath; "" for the default home's) gives it a real provider.
func describeListing(listing, configPath string) string {
	if configPath == "" {
		configPath = "~/.spool/config.yaml"
	}
	var dirs, files []string
	for _, l := range strings.Split(strings.TrimSpace(listing), "\n") {
		l = strings.TrimSpace(l)
		switch {
		case l == "" || strings.HasPrefix(l, "("):
		case strings.HasSuffix(l, "/"):
			dirs = append(dirs, l)
		default:
			files = append(files, l)
		}
	}
	show := func(xs []string) string {
		if len(xs) > 8 {
			return strings.Join(xs[:8], ", ") + fmt.Sprintf(" and %d more", len(xs)-8)
		}
		return strings.Join(xs, ", ")
	}
	var b strings.Builder
	b.WriteString("I listed the working directory with the list_files tool")
	switch {
	case len(dirs)+len(files) == 0:
		b.WriteString(": it is empty.")
	default:
		fmt.Fprintf(&b, ": %d directories and %d files.", len(dirs), len(files))
		if len(dirs) > 0 {
			b.WriteString("\n\n- directories: " + show(dirs))
		}
		if len(files) > 0 {
			b.WriteString("\n- files: " + show(files))
		}
	}
	b.WriteString("\n\nI am spool's offline model: scripted, not intelligent, so that is all I can say about them. " +
		"The session, its tool call and this answer are stored like any other (spool sessions list, spool search). " +
		"Configure a provider in " + configPath + " for real answers (see docs/configuration.md); until then, a line `CALL tool {json}` " +
		"makes me call a tool and a line `SAY text` makes me say it.")
	return b.String()
}
