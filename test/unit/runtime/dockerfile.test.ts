/**
 * Two recipes build the one image: the Dockerfile (for users with Docker) and image/build.sh
 * (`make image`, no Docker). Nothing here runs `docker build`, so a folder added to the build and
 * forgotten in the Dockerfile would break it unseen (the console once did). Both recipes must copy
 * every folder `npm run build` compiles.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { ROOT } from '../../support/paths.js';

const read = (path: string): string => readFileSync(join(ROOT, path), 'utf8');
const built = (JSON.parse(read('tsconfig.build.json')) as { include: string[] }).include;

describe('the image recipes', () => {
  it('copy every source folder into the Dockerfile build stage', () => {
    const buildStage = read('Dockerfile').split(/^FROM /m)[1] ?? '';
    for (const folder of built) expect(buildStage).toMatch(new RegExp(`^COPY ${folder} \\./${folder}$`, 'm'));
  });

  it('ship every compiled folder in the Dockerfile and in make image', () => {
    const runtimeStage = read('Dockerfile').split(/^FROM /m)[2] ?? '';
    const buildSh = read('image/build.sh');
    const copiedByBuildSh = /for d in ([a-z ]+); do cp -a "\$root\/dist\/\$d"/.exec(buildSh)?.[1]?.split(' ') ?? [];
    for (const folder of built) {
      expect(runtimeStage).toContain(`COPY --from=build /src/dist/${folder} ./dist/${folder}`);
      expect(copiedByBuildSh).toContain(folder);
    }
  });
});
