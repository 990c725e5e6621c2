// Drives the official MCP TypeScript SDK against a Pictor server, as an AI
// assistant would: discovery (RFC 9728, RFC 8414), dynamic registration
// (RFC 7591), authorization with PKCE, the consent page answered as a
// person would (sign in with an API key, approve), a token refresh, and
// tool calls. Prints one JSON object with what happened.
//
// PICTOR_MODE=connect runs the whole flow and keeps the client and its
// tokens in PICTOR_STATE; PICTOR_MODE=again reuses them for one more call
// (after the test disabled the key: the connection must be cut).
import fs from 'node:fs';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { auth, UnauthorizedError } from '@modelcontextprotocol/sdk/client/auth.js';

const mcpURL = new URL(process.env.PICTOR_MCP);
const stateFile = process.env.PICTOR_STATE;
const state = fs.existsSync(stateFile) ? JSON.parse(fs.readFileSync(stateFile, 'utf8')) : {};
const save = () => fs.writeFileSync(stateFile, JSON.stringify(state));
const redirect = 'http://127.0.0.1:49152/callback'; // never listened on: the person reads the Location

let authorizationURL = null;
const provider = {
  get redirectUrl() { return redirect; },
  get clientMetadata() {
    return {
      client_name: 'Pictor MCP test assistant',
      redirect_uris: [redirect],
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      token_endpoint_auth_method: 'none',
    };
  },
  state: () => (state.expectedState = 'st-' + Math.random().toString(36).slice(2)),
  clientInformation: () => state.client,
  saveClientInformation: (c) => { state.client = c; save(); },
  tokens: () => state.tokens,
  saveTokens: (t) => { state.tokens = t; state.refreshTokens = [...(state.refreshTokens ?? []), t.refresh_token]; save(); },
  redirectToAuthorization: (u) => { authorizationURL = new URL(u); },
  saveCodeVerifier: (v) => { state.verifier = v; save(); },
  codeVerifier: () => state.verifier,
  invalidateCredentials: (scope) => {
    if (scope === 'all' || scope === 'client') delete state.client;
    if (scope === 'all' || scope === 'tokens') delete state.tokens;
    save();
  },
};

// A browser, for the person on the consent page: cookies, no automatic
// redirects.
const jar = new Map();
async function browse(url, init = {}) {
  const headers = { ...(init.headers ?? {}) };
  if (jar.size) headers.cookie = [...jar].map(([k, v]) => `${k}=${v}`).join('; ');
  const res = await fetch(url, { ...init, headers, redirect: 'manual' });
  for (const c of res.headers.getSetCookie()) {
    const [pair] = c.split(';');
    const i = pair.indexOf('=');
    jar.set(pair.slice(0, i).trim(), pair.slice(i + 1).trim());
  }
  return res;
}

const unescape = (s) => s.replace(/&(amp|lt|gt|quot|#39|#x27|#43);/g, (m, e) =>
  ({ amp: '&', lt: '<', gt: '>', quot: '"', '#39': "'", '#x27': "'", '#43': '+' })[e]);
const attrs = (tag) => Object.fromEntries([...tag.matchAll(/([a-zA-Z_:-]+)(?:="([^"]*)")?/g)].slice(1)
  .map(([, k, v]) => [k.toLowerCase(), v === undefined ? '' : unescape(v)]));

// formOf reads the page's POST form: its action, the fields a browser
// would send (hidden, text, password, checked boxes) and its buttons.
function formOf(html) {
  const form = html.match(/<form\b[^>]*>/i);
  if (!form) throw new Error('no form on the page: ' + html.slice(0, 500));
  const fields = [];
  const buttons = [];
  for (const [tag] of html.matchAll(/<(input|button)\b[^>]*>/gi)) {
    const a = attrs(tag);
    if (tag.toLowerCase().startsWith('<button')) { buttons.push(a); continue; }
    if (!a.name) continue;
    if ((a.type === 'checkbox' || a.type === 'radio') && !('checked' in a)) continue;
    fields.push([a.name, a.value ?? '']);
  }
  return { action: attrs(form[0]).action ?? '', fields, buttons };
}

// consent signs in with the API key and approves every permission
// offered, as a person would; it returns the code and state of the
// redirect.
async function consent(url) {
  let res = await browse(url);
  if (res.status !== 200) throw new Error(`consent page: ${res.status} ${await res.text()}`);
  let form = formOf(await res.text());
  const signIn = new URLSearchParams(form.fields.filter(([k]) => k !== 'api_id' && k !== 'api_key'));
  signIn.set('api_id', process.env.PICTOR_API_ID);
  signIn.set('api_key', process.env.PICTOR_API_KEY);
  for (const b of form.buttons) if (b.name) signIn.set(b.name, b.value ?? '');
  res = await browse(new URL(form.action || url, url), {
    method: 'POST', body: signIn, headers: { 'content-type': 'application/x-www-form-urlencoded' },
  });
  if (res.status !== 200) throw new Error(`sign-in: ${res.status} ${await res.text()}`);
  form = formOf(await res.text());
  const approve = new URLSearchParams(form.fields);
  const button = form.buttons.find((b) => /approve|allow/i.test(`${b.value} ${b.name}`));
  if (!button) throw new Error('no approve button: ' + JSON.stringify(form.buttons));
  if (button.name) approve.set(button.name, button.value ?? '');
  res = await browse(new URL(form.action || url, url), {
    method: 'POST', body: approve, headers: { 'content-type': 'application/x-www-form-urlencoded' },
  });
  const location = res.headers.get('location');
  if (res.status < 300 || res.status > 399 || !location) throw new Error(`approve: ${res.status} ${await res.text()}`);
  const back = new URL(location, url);
  return { code: back.searchParams.get('code'), state: back.searchParams.get('state'), to: back.origin + back.pathname,
    offered: form.fields.filter(([k]) => k !== 'csrf' && !k.startsWith('request')).map(([, v]) => v) };
}

async function connect() {
  const transport = new StreamableHTTPClientTransport(mcpURL, { authProvider: provider });
  const client = new Client({ name: 'pictor-mcp-test', version: '1.0.0' });
  await client.connect(transport);
  return client;
}

const out = {};
if (process.env.PICTOR_MODE === 'connect') {
  // The first connection has no token: the SDK discovers, registers and
  // sends the person to the consent page.
  try {
    await connect();
    throw new Error('connected without authorization');
  } catch (e) {
    if (!(e instanceof UnauthorizedError)) throw e;
  }
  if (!authorizationURL) throw new Error('the SDK never asked for authorization');
  out.authorization = Object.fromEntries(authorizationURL.searchParams);
  const answer = await consent(authorizationURL);
  out.consent = { stateEchoed: answer.state === state.expectedState, redirectedTo: answer.to };
  const finishing = new StreamableHTTPClientTransport(mcpURL, { authProvider: provider });
  await finishing.finishAuth(answer.code);
  out.client = { id: state.client.client_id, hasSecret: 'client_secret' in state.client };

  const client = await connect();
  out.tools = (await client.listTools()).tools.map((t) => t.name);
  const created = await client.callTool({ name: 'create_image', arguments: {
    html: '<div style="width:120px;height:60px;background:rgb(255,0,0)"></div>',
    viewport_width: 120, viewport_height: 60, device_scale: 1,
  } });
  out.created = { isError: created.isError ?? false, structured: created.structuredContent, text: created.content?.[0]?.text };
  const before = state.tokens.refresh_token;
  out.refresh = { result: await auth(provider, { serverUrl: mcpURL }) };
  out.refresh.rotated = state.tokens.refresh_token !== before && state.refreshTokens.length === 2;
  const usage = await client.callTool({ name: 'check_usage', arguments: {} });
  out.usage = { isError: usage.isError ?? false, structured: usage.structuredContent, text: usage.content?.[0]?.text };
  await client.close();
} else {
  // The stored tokens of a connection whose key was disabled since.
  try {
    const client = await connect();
    const r = await client.callTool({ name: 'check_usage', arguments: {} });
    out.again = { connected: true, isError: r.isError ?? false, text: r.content?.[0]?.text };
  } catch (e) {
    out.again = { connected: false, unauthorized: e instanceof UnauthorizedError, message: String(e.message ?? e),
      sentToConsent: authorizationURL !== null };
  }
}
console.log(JSON.stringify(out));
