package proxy

import (
	"encoding/json"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/pictorhq/pictor/origin/contract/field"
	"github.com/pictorhq/pictor/origin/resource"
)

// Field limits and defaults of a proxy request (compat.md, "Proxies"; the
// choices of doc.go where it is silent).
const (
	MinName        = 3   // name, characters
	MaxName        = 500 // name, characters
	MaxUsername    = 255 // authentication.username, characters
	MaxPassword    = 255 // authentication.password, characters
	MaxBypassHosts = 100 // bypass_hosts entries

	DefaultHTTPPort  = 80
	DefaultHTTPSPort = 443
)

// Options adapt ParseRequest to the caller.
type Options struct {
	// AllowPrivate accepts a url whose host is a loopback or private
	// address literal or a local name (--allow-private-urls).
	AllowPrivate bool
	// Current is the stored proxy an update replaces; nil for a creation.
	// authentication.retain_password is checked against it.
	Current *Proxy
}

// Request is a validated create or update request; an update is a full
// replacement, so omitted optional fields hold their defaults.
type Request struct {
	Name     string
	URL      string // scheme://host, normalized
	Port     int
	Disabled bool
	Username string // "" for none
	// Password is "" for none. With RetainPassword it is always "" and the
	// stored password is kept instead.
	Password       Secret
	RetainPassword bool
	BypassHosts    []string // normalized, unique, in the order sent
}

// ParseRequest validates a proxy request from a JSON object or a form and
// reports every invalid field in one 400. JSON types are strict; form
// values are text, and an empty one counts as not sent; authentication is
// a JSON-encoded object in a form. Unknown fields are ignored. No message
// quotes the url, the username or the password.
func ParseRequest(o *field.Object, opts Options) (Request, error) {
	var errs field.Errors
	rd := reader{resource.Reader{O: o, Errs: &errs}}
	req := Request{BypassHosts: []string{}}

	switch s, ok := rd.Str("name"); {
	case !ok && !rd.Sent("name"):
		errs.Add(o.Path("name"), "is required: %d to %d characters", MinName, MaxName)
	case !ok:
	default:
		s = strings.TrimSpace(s)
		switch n := utf8.RuneCountInString(s); {
		case n < MinName || n > MaxName:
			errs.Add(o.Path("name"), "must be %d to %d characters (got %d)", MinName, MaxName, n)
		case strings.ContainsFunc(s, unicode.IsControl):
			errs.Add(o.Path("name"), "must not contain control characters")
		}
		req.Name = s
	}

	var urlPort int
	urlValid := false
	switch s, ok := rd.Str("url"); {
	case !ok && !rd.Sent("url"):
		errs.Add(o.Path("url"), "is required: the proxy's http or https URL, such as http://proxy.example.com")
	case ok:
		norm, port, problem := parseURL(s)
		if problem == "" {
			problem = checkHost(norm, opts.AllowPrivate)
		}
		if problem != "" {
			errs.Add(o.Path("url"), "%s", problem)
			break
		}
		req.URL, urlPort, urlValid = norm, port, true
	}

	portValid := true
	if rd.Sent("port") {
		n, ok := o.Int(&errs, "port", 1, 65535)
		switch {
		case !ok:
			portValid = false
		case urlPort != 0 && int(n) != urlPort:
			errs.Add(o.Path("port"), "is %d but url names port %d: give the port once, or the same in both", n, urlPort)
			portValid = false
		default:
			req.Port = int(n)
		}
	} else if urlPort != 0 {
		req.Port = urlPort
	}
	if req.Port == 0 && urlValid {
		req.Port = DefaultHTTPPort
		if strings.HasPrefix(req.URL, "https:") {
			req.Port = DefaultHTTPSPort
		}
	}

	if v, ok := rd.Bool("disabled"); ok {
		req.Disabled = v
	}
	rd.authentication(&req, opts.Current, urlValid && portValid)
	req.BypassHosts = rd.bypassHosts()
	return req, errs.Err()
}

// reader reads top-level fields (resource.Reader).
type reader struct{ resource.Reader }

// authentication reads {username, password, retain_password}. endpointValid
// says whether url and port were read, so that retain_password can be
// checked against them.
func (rd reader) authentication(req *Request, current *Proxy, endpointValid bool) {
	const name = "authentication"
	if !rd.Sent(name) {
		return
	}
	path := rd.O.Path(name)
	var raw []byte
	if rd.O.IsForm() {
		vs := rd.O.FormValues(name)
		raw = []byte(vs[len(vs)-1])
	} else {
		raw, _ = rd.O.Raw(name)
	}
	var m map[string]json.RawMessage
	if t := strings.TrimSpace(string(raw)); !strings.HasPrefix(t, "{") || json.Unmarshal(raw, &m) != nil {
		what := "an object"
		if rd.O.IsForm() {
			what = "a JSON-encoded object"
		}
		rd.Errs.Add(path, "must be %s {username, password} or {username, retain_password: true}", what)
		return
	}
	sub := field.FromJSON(m)
	sub.Prefix = path + "."

	usernameValid := true
	if s, ok := sub.String(rd.Errs, "username"); ok && s != "" {
		switch n := utf8.RuneCountInString(s); {
		case n > MaxUsername:
			rd.Errs.Add(sub.Path("username"), "must be at most %d characters (got %d)", MaxUsername, n)
			usernameValid = false
		case strings.ContainsFunc(s, unicode.IsControl):
			rd.Errs.Add(sub.Path("username"), "must not contain control characters")
			usernameValid = false
		case strings.ContainsRune(s, ':'):
			rd.Errs.Add(sub.Path("username"), "must not contain ':' (HTTP Basic authentication cannot carry it)")
			usernameValid = false
		}
		req.Username = s
	} else if !ok && sub.Present("username") {
		usernameValid = false
	}

	passwordSent := sub.Present("password")
	if s, ok := sub.String(rd.Errs, "password"); ok && s != "" {
		switch n := utf8.RuneCountInString(s); {
		case n > MaxPassword:
			rd.Errs.Add(sub.Path("password"), "must be at most %d characters (got %d)", MaxPassword, n)
		case strings.ContainsFunc(s, unicode.IsControl):
			rd.Errs.Add(sub.Path("password"), "must not contain control characters")
		case req.Username == "" && usernameValid:
			rd.Errs.Add(sub.Path("password"), "needs authentication.username")
		}
		req.Password = Secret(s)
	}

	retain, ok := sub.Bool(rd.Errs, "retain_password")
	if !ok || !retain {
		return
	}
	rpath := sub.Path("retain_password")
	switch {
	case passwordSent:
		rd.Errs.Add(rpath, "cannot be sent with authentication.password: send the new password, or retain_password alone to keep the stored one")
	case current == nil:
		rd.Errs.Add(rpath, "is only for updates: a new proxy has no password to keep")
	case usernameValid && endpointValid:
		if problem := retainProblem(current, *req); problem != "" {
			rd.Errs.Add(rpath, "%s", problem)
		}
	}
	req.Password, req.RetainPassword = "", true
}

// retainProblem says why req may not keep cur's password, "" when it may:
// cur has a password, and req names the same username, url and port, so
// that a stored password is only ever sent where and as whom it was given.
func retainProblem(cur *Proxy, req Request) string {
	switch {
	case !cur.HasPassword():
		return "cannot keep a password: none is stored for this proxy"
	case req.Username != cur.Username:
		return "keeps the password only for the same username: send the password with a new username"
	case req.URL != cur.URL || req.Port != cur.Port:
		return fmt.Sprintf("keeps the password only for the same url and port (%s, port %d): send the password again to use it elsewhere", cur.URL, cur.Port)
	}
	return ""
}

// bypassHosts reads bypass_hosts: an array (in a form, repeated values or a
// JSON-encoded array) of at most MaxBypassHosts entries, normalized and
// deduplicated in the order sent. Every invalid entry is reported.
func (rd reader) bypassHosts() []string {
	const name = "bypass_hosts"
	out := []string{}
	path := rd.O.Path(name)
	var items []json.RawMessage
	if rd.O.IsForm() {
		// Empty values are not sent; the others are repeated values or one
		// JSON-encoded array.
		var vs []string
		for _, v := range rd.O.FormValues(name) {
			if v != "" {
				vs = append(vs, v)
			}
		}
		if len(vs) == 1 && strings.HasPrefix(strings.TrimSpace(vs[0]), "[") {
			if json.Unmarshal([]byte(vs[0]), &items) != nil {
				rd.Errs.Add(path, "must be a JSON-encoded array of host names")
				return out
			}
		} else {
			for _, v := range vs {
				if !utf8.ValidString(v) {
					items = append(items, nil) // reported below, never quoted
					continue
				}
				b, _ := json.Marshal(v)
				items = append(items, b)
			}
		}
	} else {
		raw, ok := rd.O.Raw(name)
		if !ok {
			return out
		}
		if t := strings.TrimSpace(string(raw)); !strings.HasPrefix(t, "[") || json.Unmarshal(raw, &items) != nil {
			rd.Errs.Add(path, "must be an array of host names")
			return out
		}
	}
	if len(items) > MaxBypassHosts {
		rd.Errs.Add(path, "must hold at most %d hosts (got %d)", MaxBypassHosts, len(items))
		return out
	}
	seen := make(map[string]bool, len(items))
	for i, item := range items {
		where := fmt.Sprintf("%s[%d]", path, i)
		if item == nil {
			rd.Errs.Add(where, "must be valid UTF-8 text")
			continue
		}
		var s string
		if t := strings.TrimSpace(string(item)); !strings.HasPrefix(t, `"`) || json.Unmarshal(item, &s) != nil {
			rd.Errs.Add(where, "must be a string")
			continue
		}
		host, problem := parseBypassHost(s)
		if problem != "" {
			rd.Errs.Add(where, "%s", problem)
			continue
		}
		if !seen[host] {
			seen[host] = true
			out = append(out, host)
		}
	}
	return out
}
