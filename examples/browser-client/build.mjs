// Bundles src/app.js and Genkit's client into dist/app.js, one ES module the page loads.
// esbuild-wasm is esbuild compiled to WebAssembly: the same bundler, with no per-platform binary
// to install (npm ci --omit=optional leaves those out).
import * as esbuild from 'esbuild-wasm';

await esbuild.build({
  entryPoints: ['src/app.js'],
  bundle: true,
  format: 'esm',
  platform: 'browser',
  target: 'es2022',
  outfile: 'dist/app.js',
  sourcemap: true,
  logLevel: 'warning',
});
