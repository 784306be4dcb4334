// npm run client -- <command>: the service's command-line client for scientists.
import { ApiError } from "./http.ts";
import { compareCommand, COMPARE_HELP } from "./commands/compare.ts";
import { imagesCommand, IMAGES_HELP } from "./commands/images.ts";
import { importCommand, IMPORT_HELP } from "./commands/import.ts";
import { modelsCommand, MODELS_HELP } from "./commands/models.ts";
import { segmentCommand, SEGMENT_HELP } from "./commands/segment.ts";
import { segmentationCommand, SEGMENTATION_HELP } from "./commands/segmentation.ts";
import { trainCommand, TRAIN_HELP } from "./commands/train.ts";
import { UsageError } from "./connection.ts";
import { Interruption } from "./interruption.ts";

const first = (help: string) => help.split("\n")[0]!.replace("npm run client -- ", "  ");

const HELP = `npm run client -- <command> [options]   (each command has --help)

Commands:
${first(SEGMENT_HELP)}
${first(IMAGES_HELP)}
${first(MODELS_HELP)}
${first(SEGMENTATION_HELP)}
${first(IMPORT_HELP)}
${first(TRAIN_HELP)}
${first(COMPARE_HELP)}

Set CELLSEG_API (e.g. https://cellseg.example.org/api/v1) and CELLSEG_KEY (an API key from the
dashboard), or pass --api and --key.`;

/**
 * The first Ctrl-C (or SIGTERM) stops a segment run cleanly; a second one quits at once, which is
 * safe too (every step is already in the resume state) but may leave an upload half done.
 */
function stopCleanly(): Interruption {
  const interruption = new Interruption();
  const stop = () => {
    if (interruption.requested) process.exit(130);
    interruption.request();
    process.stderr.write("\nStopping after the steps in flight (Ctrl-C again to quit at once)...\n");
  };
  process.on("SIGINT", stop);
  process.on("SIGTERM", stop);
  return interruption;
}

const COMMANDS: Record<string, (args: string[]) => Promise<number>> = {
  segment: (args) => segmentCommand(args, { out: process.stdout, interruption: stopCleanly() }),
  images: (args) => imagesCommand(args, process.stdout),
  models: (args) => modelsCommand(args, process.stdout),
  segmentation: (args) => segmentationCommand(args, process.stdout),
  import: (args) => importCommand(args, process.stdout),
  train: (args) => trainCommand(args, process.stdout),
  compare: (args) => compareCommand(args, process.stdout),
};

async function main(argv: string[]): Promise<number> {
  const [command, ...args] = argv;
  if (command === undefined || command === "help" || command === "--help" || command === "-h") {
    process.stdout.write(`${HELP}\n`);
    return command === undefined ? 2 : 0;
  }
  const run = COMMANDS[command];
  if (!run) {
    process.stderr.write(`Unknown command ${JSON.stringify(command)}\n\n${HELP}\n`);
    return 2;
  }
  try {
    return await run(args);
  } catch (error) {
    if (error instanceof UsageError || (error as { code?: string }).code === "ERR_PARSE_ARGS_UNKNOWN_OPTION") {
      process.stderr.write(`${(error as Error).message}\n(npm run client -- ${command} --help)\n`);
      return 2;
    }
    if (error instanceof ApiError && error.status === 401) {
      process.stderr.write("The service refused the API key (401): check CELLSEG_KEY and CELLSEG_API\n");
      return 1;
    }
    process.stderr.write(`${(error as Error).message}\n`);
    return 1;
  }
}

process.exitCode = await main(process.argv.slice(2));
