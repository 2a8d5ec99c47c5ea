import { PAGE_SCRIPT_BUILD } from '../../functions/api/ui.js';

/**
 * Commands run after the `ui` function is bundled: the network page's script bundled with its graph
 * library (the same options the function uses when it bundles on request from the repository), and its
 * HTML and CSS, into `ui/` beside the function's bundle, where the function reads them.
 */
export function pageBuildCommands(inputDir: string, outputDir: string): string[] {
  const { format, target, minify, bundle } = PAGE_SCRIPT_BUILD;
  const flags = [
    bundle ? '--bundle' : '',
    minify ? '--minify' : '',
    `--format=${format}`,
    `--target=${target}`,
  ]
    .filter(Boolean)
    .join(' ');
  return [
    `mkdir -p "${outputDir}/ui"`,
    `"${inputDir}/node_modules/.bin/esbuild" "${inputDir}/functions/ui/app.ts" ${flags} --log-level=warning --outfile="${outputDir}/ui/app.js"`,
    `cp "${inputDir}/functions/ui/index.html" "${inputDir}/functions/ui/style.css" "${outputDir}/ui/"`,
  ];
}
