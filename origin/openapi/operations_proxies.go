package openapi

// The operations of proxies: each is a route's Doc in the origin's table.

// proxies are the organization's proxies.
var proxies = resource{tag: tagProxies, note: planNote, name: "proxy", missing: "No such proxy in the organization.",
	body: "The proxy.", request: schProxyRequest, form: schProxyForm, one: schProxy, page: schProxyList}

// CreateProxy documents POST /v1/proxies.
var CreateProxy = describe("createProxy", proxies.create(crud{summary: "Create a proxy", ok: "Created."}))

// ListProxies documents GET /v1/proxies.
var ListProxies = describe("listProxies", proxies.list(crud{summary: "List proxies", ok: "One page of proxies."}))

// GetProxy documents GET /v1/proxies/{id}.
var GetProxy = describe("getProxy", proxies.get(crud{summary: "Get a proxy", ok: "The proxy."}))

// UpdateProxy documents POST /v1/proxies/{id}.
var UpdateProxy = describe("updateProxy", proxies.update(crud{summary: "Update a proxy", description: "Replaces the proxy.", ok: "Updated."}))

// DeleteProxy documents DELETE /v1/proxies/{id}.
var DeleteProxy = describe("deleteProxy", proxies.delete(crud{summary: "Delete a proxy", description: "Images already made through it are unaffected.", ok: "Deleted."}))
