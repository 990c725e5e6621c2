// Package proxy manages proxies (/v1/proxies): the HTTP(S) proxies an
// organization routes a render's outbound traffic through (spec §2.2
// proxy_id, §2.6; compat.md "Proxies"). It validates requests, keeps the
// records with their passwords sealed, lists them with cursors, and gives
// the render path Store.Get and Store.Credentials.
//
// # Keys
//
// Every key of the package starts with "prx/". Values are JSON.
//
//	prx/p/<id>            Proxy record (the password sealed in it)
//	prx/o/<org_id>/<id>   empty; an organization's proxies in creation order (ids are UUIDv7)
//
// A proxy's keys are written and removed in one batch, under its
// organization's write lock.
//
// # Decisions
//
//   - Proxies need the plan with 10,000 images a month or a larger one
//     (plan.Plan.Delivery: pro and scale). On a smaller plan every route of
//     the resource (create, list, get, update, delete) answers 403 naming
//     that requirement and the organization's plan, whatever the key's
//     permissions: a permission does not enable a feature the plan lacks
//     (spec §5 rule 3), and the resource is the feature. The check runs
//     before the id and the body are read. After a downgrade the proxies
//     stay stored, out of reach, and come back with the plan. (The check
//     is the handler's, after the router's rate limit: such a 403 counts
//     against proxy:read or proxy:write and carries the rate-limit
//     headers, unlike the router's own 401/403. CheckPlan is exported so
//     that the router can run it before the limit.)
//   - Requests are JSON, multipart or URL-encoded forms. JSON types are
//     strict ("8080" is not a port, "true" not a boolean); forms are text,
//     an empty form value counts as not sent, authentication is a
//     JSON-encoded object and bypass_hosts repeats or is a JSON-encoded
//     array. Unknown fields are ignored.
//   - Create and update are the same request; update is a full
//     replacement: what is omitted takes its default, so an update without
//     authentication removes the username and password.
//   - name is required, 3 to 500 characters after surrounding blanks are
//     trimmed, without control characters.
//   - url is required: http or https, a host, nothing after it but an
//     optional "/" — no path, query, fragment, credentials or backslash. It
//     is stored as scheme://host, lower-case, IPv6 in brackets and
//     canonical form, one trailing dot of a name dropped. Hosts are ASCII
//     (international names in their xn-- form); a host whose last label is
//     numeric must be an IPv4 address in dotted decimal. A loopback,
//     private or metadata address literal or a local name (localhost) is
//     refused as for image creation's url, unless --allow-private-urls
//     (metadata never); names that need DNS are the render's to check.
//   - port is 1 to 65535, by default 80 for http and 443 for https. A port
//     written in url is merged: it becomes port, and url is stored without
//     it. Sent in both places it must be the same number (else a 400
//     naming port).
//   - authentication is {username, password} or {username,
//     retain_password: true}; omitted or null means no credentials.
//     username is at most 255 characters, without control characters or
//     ':' (Basic authentication cannot carry it); "" is none. password is
//     at most 255 characters without control characters; "" is none; a
//     password needs a username. Answers show username (null when none)
//     and nothing about the password, not even whether one is stored (only a
//     refused retain_password says that none is).
//   - retain_password: true keeps the stored password on an update when a
//     password is stored and the request names the same username, the
//     same url and the same port. The password is only ever sent where,
//     and as whom, it was given: whoever may update a proxy but never knew
//     its password cannot point it at a host of theirs and have renders
//     deliver it there. Sent together with password (even an empty one)
//     it is a 400 naming authentication.retain_password; so is it on a
//     creation, or when a condition fails (the message says which).
//     retain_password false is the same as leaving it out.
//   - bypass_hosts: at most 100 entries as sent; each a host name, an IP
//     literal (IPv6 with or without brackets) or a wildcard "*.name",
//     which matches every subdomain of name at any depth but not name
//     itself. No scheme, port, path, address range or other use of "*".
//     Entries are lower-cased (IPv6 canonical, without brackets, one
//     trailing dot of a name dropped) and deduplicated, keeping the order
//     first sent. Proxy.Bypasses is the matching rule the render applies.
//   - The password is sealed with the origin's seal.Box, the proxy's id as
//     additional data (a sealed password cannot be moved to another
//     record). Store.Credentials opens it; a value in the legacy sealed
//     format is stored again in the current one. Passwords never appear in
//     answers, logs or error messages: Request holds it as a Secret, which
//     prints, logs and marshals as "[redacted]".
//   - ids are UUIDv7 (lists sort by creation); a malformed {id} is a 400
//     naming id; another organization's id and an unknown one give the
//     same 404. An update reads the proxy before its body, so a foreign id
//     is a 404 whatever the body holds.
//   - Lists are newest first, disabled proxies included; count 1 to 100
//     (default 10) and page_start as for every management list. Create
//     answers 200, delete 204. Timestamps are UTC with milliseconds.
package proxy
