// Runs a snippet the console shows under "Copy as TypeScript" (read from
// stdin) with the official client pointed at PICTOR_BASE in scope as
// `client`, the way docs/clients.md sets it up. The snippet's own
// console.log output is this program's.
import {
  HtmlCssToImageClient,
  CreateHtmlCssImageRequest,
  CreateUrlImageRequest,
} from '@html-css-to-image/client';

const base = process.env.PICTOR_BASE;
const client = new HtmlCssToImageClient(process.env.PICTOR_API_ID, process.env.PICTOR_API_KEY,
  (url, init) => fetch(String(url).replace('https://hcti.io', base), init));

let code = '';
for await (const chunk of process.stdin) {
  code += chunk;
}
const AsyncFunction = (async () => {}).constructor;
await new AsyncFunction('client', 'CreateHtmlCssImageRequest', 'CreateUrlImageRequest', code)(
  client, CreateHtmlCssImageRequest, CreateUrlImageRequest);
