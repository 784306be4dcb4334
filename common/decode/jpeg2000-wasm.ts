// Loading OpenJPEG (github.com/uclouvain/openjpeg) built to WebAssembly by the Cornerstone project
// (@cornerstonejs/codec-openjpeg, its decode-only build) into this thread, for jpeg2000-codec.ts.
// Node only: the runner's region reader calls it; the worker never does.
import { createRequire } from "node:module";
import { type OpenJpegDecoder, openJpegOutput, useJpeg2000Decoder } from "./jpeg2000-codec.ts";

type OpenJpegFactory = (options: { print(line: string): void; printErr(): void }) => Promise<{ J2KDecoder: new () => OpenJpegDecoder }>;

let loading: Promise<void> | undefined;

/** Instantiates the decoder once for this thread (about 10 ms); later calls return at once. */
export function loadJpeg2000Codec(): Promise<void> {
  loading ??= (async () => {
    const factory = createRequire(import.meta.url)("@cornerstonejs/codec-openjpeg/decodewasmjs") as OpenJpegFactory;
    // OpenJPEG writes its progress and its errors as lines of output: the codec reads the errors,
    // and a runner's log is no place for the rest.
    const module = await factory({ print: openJpegOutput, printErr() {} });
    useJpeg2000Decoder(new module.J2KDecoder(), () => {
      loading = undefined;
    });
  })();
  return loading;
}
