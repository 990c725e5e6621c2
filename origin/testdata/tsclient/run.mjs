// Drives the official TypeScript client against a Pictor server. The client
// talks to https://hcti.io; its fetch is pointed at PICTOR_BASE instead.
// Prints one JSON object with what each call returned.
import {
  HtmlCssToImageClient,
  CreateHtmlCssImageRequest,
  CreateUrlImageRequest,
} from '@html-css-to-image/client';

const base = process.env.PICTOR_BASE;
const toPictor = (u) => String(u).replace('https://hcti.io', base);
const client = new HtmlCssToImageClient(process.env.PICTOR_API_ID, process.env.PICTOR_API_KEY,
  (url, init) => fetch(toPictor(url), init));

const box = (w, h, color) => `<div style="width:${w}px;height:${h}px;background:${color}"></div>`;
const out = {};
out.create = await client.createImage(new CreateHtmlCssImageRequest({
  html: box(120, 60, 'rgb(255,0,0)'), device_scale: 1, google_fonts: ['Open Sans'], dedupe_duration_s: 0,
}));
out.batch = await client.createImageBatch(
  [new CreateHtmlCssImageRequest({ html: box(30, 20, 'rgb(0,0,255)') }), new CreateHtmlCssImageRequest({ device_scale: 2 })],
  new CreateHtmlCssImageRequest({ html: box(10, 10, 'rgb(0,128,0)'), device_scale: 1 }),
);
const signed = client.generateCreateAndRenderUrl(new CreateUrlImageRequest({
  url: process.env.PICTOR_SITE, viewport_width: 300, viewport_height: 150, device_scale: 1,
}));
out.signedUrl = toPictor(signed);
const res = await fetch(out.signedUrl);
out.signed = { status: res.status, type: res.headers.get('content-type'), bytes: Buffer.from(await res.arrayBuffer()).toString('base64') };
out.deleteOne = await client.deleteImage(out.create.id);
out.deleteBatch = await client.deleteImageBatch(out.batch.images.map((i) => i.id));
out.deleteMissing = await client.deleteImage('01a20000-0000-7000-8000-000000000000');
console.log(JSON.stringify(out));
