/**
 * The spool's PersistentVolumeClaims in StatefulSet mode (spool.persistence.enabled): kept on
 * scale-down and uninstall with retainOnScaleDown (the default), deleted with their replica
 * without it. The policy is rendered either way, since Kubernetes' own default keeps them.
 */
import { renderChart } from '../../support/helm.js';

interface Doc {
  kind: string;
  spec?: { persistentVolumeClaimRetentionPolicy?: { whenScaled: string; whenDeleted: string } };
}

const statefulSet = (...set: string[]) =>
  renderChart<Doc>('intake', 'intake', [
    '--set',
    'spool.enabled=true',
    '--set',
    'spool.persistence.enabled=true',
    ...set,
  ])
    .filter((d) => d.kind === 'StatefulSet')
    .map((d) => d.spec?.persistentVolumeClaimRetentionPolicy);

describe('chart: the spool claims of the ingester StatefulSet', () => {
  it('are kept on scale-down and uninstall by default', () => {
    expect(statefulSet()).toEqual([{ whenScaled: 'Retain', whenDeleted: 'Retain' }]);
  });

  it('go with their replica when retainOnScaleDown is false', () => {
    expect(statefulSet('--set', 'spool.persistence.retainOnScaleDown=false')).toEqual([
      { whenScaled: 'Delete', whenDeleted: 'Delete' },
    ]);
  });
});
