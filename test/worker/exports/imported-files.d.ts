// Vite's import suffixes the golden test uses: `?raw` gives a file's text, `?inline` an image as a
// data: URL.
declare module "*?raw" {
  const text: string;
  export default text;
}
declare module "*?inline" {
  const dataUrl: string;
  export default dataUrl;
}
