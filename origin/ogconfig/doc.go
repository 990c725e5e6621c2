// Package ogconfig manages OG configurations (/v1/og-configs): the request
// rules of compat.md's "OG configurations", their records with a public
// domain id, the one-enabled-configuration-per-origin rule (409), listing
// with cursors, and the look-up by domain id that the OG serving path uses.
//
// # Keys
//
// Every key of the package starts with "ogc/". Values are JSON unless noted.
//
//	ogc/c/<id>                  Config record
//	ogc/d/<domain_id>           id of the configuration with that domain id (ByDomainID)
//	ogc/o/<org_id>/<id>         empty; an organization's configurations in creation order (ids are UUIDv7)
//	ogc/e/<org_id>/<base_url>   id of the organization's one enabled configuration for that origin
//	ogc/n/<id>                  its new images of the current UTC day and billing period (caps.go)
//	ogc/s/<org_id>              the credits the organization's OG images spent in the current billing period
//
// A configuration's keys are written and removed in one batch, under its
// organization's write lock; the counts are kept under the same lock.
//
// # Decisions
//
//   - Requests are JSON, multipart or URL-encoded forms. JSON types are
//     strict ("true" is not a boolean, "86400" not a number); forms are
//     text, and an empty form value counts as not sent. default_options
//     and template_values_mapping are JSON-encoded strings in a form;
//     headers are Name:value (repeatable) or a JSON-encoded object, and
//     additional_header_origins repeats or is a JSON array, as for image
//     creation. Unknown fields are ignored. Enumerations are exact
//     (lower-case) values.
//   - Create and update are the same request (update is a full
//     replacement: what is omitted takes its default). config_type and
//     base_url are required; name and description are optional ("" when
//     omitted, null or blank); disabled defaults to false,
//     refresh_interval_s to 86400 (60 to 31536000: below a minute every
//     crawler's visit would recheck the page), optimization_mode to
//     post_process, extract_values to true (the page's metadata is read:
//     hcti: render overrides, html:tv: values, the mapping's meta keys;
//     false uses the configuration alone).
//   - base_url is an exact origin: http or https, an ASCII host (xn-- form
//     for international names), an optional port, nothing after it but an
//     optional "/". It is stored as scheme://host[:port], lower-case,
//     without a default port — the rules and code of imageparams for
//     additional_header_origins, so the two compare equal. A host that is
//     a loopback, private or metadata address literal (or a local name) is
//     refused as for image creation's url, unless --allow-private-urls.
//   - default_options holds image creation parameters, validated by
//     imageparams as for image creation (the plan's max_wait_ms cap
//     included) with errors under "default_options.<field>". Only the
//     parameters that shape the capture of a page are accepted (OptionNames);
//     other creation parameters (html, url, format, pdf_options, jumbo,
//     headers, proxy_id, ...) are a 400 saying why; names that are no
//     creation parameter are ignored. They are stored normalized (typed,
//     defaults left out) and answered as stored. viewport × device_scale
//     obeys image creation's output limits (16,384 px a side, 64 MP), with
//     device_scale's default for a URL render (1) for html_css and for an
//     HTML render (2) for templated.
//   - template_id (t-...) is required for templated configurations and
//     template_version (≥ 1) optional (none: the latest version at render
//     time); both are refused for html_css, as is a non-empty
//     template_values_mapping. A template (or version) the organization
//     does not hold is a 404 naming it, at every save (disabled
//     configurations included). A template deleted later is the render's
//     problem, not the configuration's.
//   - template_values_mapping: at most 32 entries, each {template_key,
//     meta_key} or {template_key, fallback: titles|descriptions}, exactly
//     one of the two; a template_key is mapped once; meta_key is a meta
//     name or property without spaces (≤ 255 characters).
//   - headers and additional_header_origins have image creation's rules and
//     limits (spec §8: 20 header names, 20 origins; no hop-by-hop, framing,
//     proxy or Host header; values ≤ 8 KiB without control characters).
//     Header values are answered
//     as they are stored: whoever can read configurations reads them.
//   - At most one ENABLED configuration per exact base_url per
//     organization: a second (created enabled, enabled by an update, or
//     moved to that base_url while enabled) is a 409 whose message names
//     the existing configuration's id. Disabled configurations may share
//     an origin. The rule does not span organizations: nothing proves who
//     owns a site, and the serving path finds a configuration by its
//     domain id, never by origin, so two organizations configuring the same
//     origin cannot disturb each other. The check and the claim are made
//     under the organization's lock, so concurrent saves cannot both win
//     within one process; origins sharing one store would need a
//     conditional write in kv to keep the rule.
//   - ids are UUIDv7 (lists sort by creation); a malformed {id} is a 400
//     naming id; another organization's id and an unknown one give the
//     same 404. domain_id is 128 random bits in lower-case base32 (26
//     characters, safe in a path and a host label), distinct from id,
//     fixed for the configuration's life; ByDomainID is one index read.
//   - Revision starts at 1 and grows at every update, even one that
//     changes nothing (an update is how a caller forces a refresh).
//   - Answers: the request fields (disabled shown as enabled; collections
//     never null; template_id and template_version null when not set),
//     plus id, domain_id, created_at and updated_at (UTC, milliseconds).
//     Create answers 200 as every management create.
//   - After an update or a deletion, Handler.OnChange runs before the
//     answer (edges drop the configuration's OG images). If it fails, the
//     change stays and the answer is 500, as for templates.
//   - POST /v1/og-configs/{id}/refresh (the create/update permission and
//     rate-limit group): with {"path": "/post/1"} the page is read now by a
//     Refresher and its card's identity answered (200); without a path (no
//     body, {}, a null path, an empty form value) RequestRefresh grows the
//     configuration's RefreshGeneration, so every page is read again at its
//     next request (202). The path is NormalizePagePath's: the OG GET
//     path's spelling, no scheme, host, query or fragment, 2 KiB. A
//     disabled configuration is a 409. OnRefresh runs before the answer to
//     purge the edges (the page's tag when its identity changed, the
//     configuration's tag for every page).
//
// # Caps on new images
//
//   - A new image is an OG creation that charges credits: a new path,
//     another platform's variant, a changed page or content_version, a
//     new revision of the configuration. Anonymous visitors cause them, so
//     each configuration has caps: max_new_images_per_day (UTC day) and
//     max_new_images_per_period (the organization's billing period, as
//     usage computes it). null (or absent) is the default: per period 20 %
//     of the plan's credits rounded up, per day a tenth of the effective
//     period cap rounded up and at least 10 (free: 10 and 10; basic 20 and
//     200; pro 200 and 2,000; scale 2,000 and 20,000). 0 serves only images
//     that exist. Both are integers from 0 to the plan's credits per
//     period (a 400 naming the field above it); JSON types are strict,
//     forms are text, as for the other integer fields. A plan that shrank
//     later bounds what was set.
//   - Whatever the caps say, all OG images of an organization together
//     spend at most 50 % of the plan's credits in a billing period (fixed):
//     anonymous traffic never takes the organization's last half.
//   - Counting is exact across origins sharing the store: Reserve is one
//     kv.Update under the organization's lock that checks and counts; the
//     serving path reserves before it creates, and gives the reservation
//     back (Release) when the creation fails or charged nothing. A
//     reservation whose origin dies before it is given back stays counted:
//     the caps err on the side of fewer images. A creation whose render
//     then fails stays counted too (its credits may be refunded).
//   - Answers show the fields as set (null for the default) and a
//     read-only "limits" object: new_images_per_day, new_images_per_period
//     (in force), used_today, used_this_period, and the organization's
//     organization_og_credits_per_period and
//     organization_og_credits_used_this_period. Update is a full
//     replacement; the counts stay the configuration's (a deletion drops
//     them).
package ogconfig
